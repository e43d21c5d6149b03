"""Console pages of approvals_app, mounted under /t/<tenant_slug>/approvals/."""

from django.urls import path

from . import views

app_name = "approvals"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("<str:approval_id>/", views.detail, name="detail"),
    path("<str:approval_id>/decide", views.decide, name="decide"),
]
