"""Inbound chat answers (notifications_app.interactions): signed, not behind the console login."""

from django.urls import path

from . import interactions

app_name = "hooks"

urlpatterns = [
    path("slack/<slug:slug>/<str:channel_id>/", interactions.slack_action, name="slack"),
    path("webhook/<slug:slug>/<str:channel_id>/", interactions.webhook_action, name="webhook"),
]
