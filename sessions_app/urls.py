"""Console pages of sessions_app, mounted under /t/<tenant_slug>/sessions/ by console_app.urls
(which adds the list, bulk actions, timeline and export to the namespace)."""

from django.urls import path

from . import views

app_name = "sessions"
urlpatterns = [
    path("<str:session_id>/close", views.close, name="close"),
    path("<str:session_id>/expire", views.expire, name="expire"),
    path("<str:session_id>/hold", views.hold, name="hold"),
    path("<str:session_id>/delete", views.delete, name="delete"),
    path("<str:session_id>/deletions/<str:deletion_id>/", views.deletion_progress, name="deletion"),
]
