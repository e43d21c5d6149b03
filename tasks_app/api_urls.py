"""Runtime API routes of tasks_app, mounted under /api/v1/."""

from django.urls import path

from . import api

urlpatterns = [
    path("tasks", api.task_create, name="api-task-create"),
    path("tasks/<pid:task_id>", api.task_detail, name="api-task-detail"),
    path("tasks/<pid:task_id>/state", api.task_state, name="api-task-state"),
    path("tasks/<pid:task_id>/checkpoints", api.checkpoint_create, name="api-checkpoint-create"),
    # Before the <checkpoint_id> route; generated checkpoint ids never read "latest".
    path(
        "tasks/<pid:task_id>/checkpoints/latest",
        api.checkpoint_latest,
        name="api-checkpoint-latest",
    ),
    path(
        "tasks/<pid:task_id>/checkpoints/<pid:checkpoint_id>",
        api.checkpoint_detail,
        name="api-checkpoint-detail",
    ),
]
