"""Console pages of audit_app, mounted under /t/<tenant_slug>/audit/ by console_app.urls."""

from django.urls import path

from . import views

app_name = "audit"
urlpatterns = [
    path("", views.log, name="log"),
    path("export.<str:fmt>", views.export, name="export"),
    path("verify", views.verify, name="verify"),
]
