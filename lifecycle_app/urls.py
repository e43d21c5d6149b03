"""Console pages of lifecycle_app of their own, mounted under /t/<tenant_slug>/erasures/ by
console_app.urls (which also mounts the close, expire and deletion pages of one session under
the `sessions` namespace)."""

from django.urls import path

from . import views

app_name = "lifecycle"
urlpatterns = [
    path("", views.erase, name="erase"),
    path("<str:erasure_id>/", views.erasure_progress, name="erasure"),
]
