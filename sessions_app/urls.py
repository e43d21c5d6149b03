"""Console pages of sessions_app, mounted under /t/<tenant_slug>/sessions/."""

from django.urls import path

from . import views

app_name = "sessions"
urlpatterns = [
    path("", views.session_list, name="list"),
    path("bulk", views.bulk, name="bulk"),
    path("<str:session_id>/", views.session_detail, name="detail"),
    path("<str:session_id>/items", views.session_items, name="items"),
    path("<str:session_id>/close", views.close, name="close"),
    path("<str:session_id>/expire", views.expire, name="expire"),
    path("<str:session_id>/hold", views.hold, name="hold"),
    path("<str:session_id>/delete", views.delete, name="delete"),
    path("<str:session_id>/deletions/<str:deletion_id>/", views.deletion_progress, name="deletion"),
    path("<str:session_id>/export.<str:fmt>", views.export, name="export"),
]
