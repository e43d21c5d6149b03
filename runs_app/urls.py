"""Console pages of runs_app, mounted under /t/<tenant_slug>/runs/."""

from django.urls import path

from . import views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
    path("<str:run_id>/", views.run_detail, name="detail"),
]
