"""Console pages of runs_app, mounted under /t/<tenant_slug>/runs/ by console_app.urls
(which adds the run inspector to the namespace)."""

from django.urls import path

from . import views

app_name = "runs"
urlpatterns = [
    path("", views.run_list, name="list"),
]
