"""Console pages of effects_app, mounted under /t/<tenant_slug>/effects/ by console_app.urls."""

from django.urls import path

from . import views

app_name = "effects"
urlpatterns = [
    path("", views.queue, name="queue"),
    path("<str:effect_id>/settle", views.settle, name="settle"),
]
