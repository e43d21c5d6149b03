"""Console pages of tasks_app, mounted under /t/<tenant_slug>/tasks/ by console_app.urls
(which adds the task inspector to the namespace)."""

from django.urls import path

from . import views

app_name = "tasks"
urlpatterns = [
    path("", views.task_list, name="list"),
    path("<str:task_id>/checkpoints/<str:checkpoint_id>/", views.checkpoint, name="checkpoint"),
    path("<str:task_id>/diff", views.checkpoint_diff, name="diff"),
    path("<str:task_id>/langgraph/diff", views.graph_diff, name="graph-diff"),
    path(
        "<str:task_id>/langgraph/<str:checkpoint_id>/",
        views.graph_checkpoint,
        name="graph-checkpoint",
    ),
]
