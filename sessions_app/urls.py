"""Console pages of sessions_app, mounted under /t/<tenant_slug>/sessions/ by console_app.urls
(which adds the list, bulk actions, timeline and export, and lifecycle_app's close,
expire and deletion pages, to the namespace)."""

from django.urls import path

from . import views

app_name = "sessions"
urlpatterns = [
    path("<str:session_id>/hold", views.hold, name="hold"),
]
