"""Runtime API routes of tasks_app, mounted under /api/v1/."""

from django.urls import path

from . import api, langgraph_api

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
    # LangGraph threads (a thread is a task): tasks_app/langgraph_api.py
    path("tasks/<pid:task_id>/langgraph", langgraph_api.thread, name="api-langgraph-thread"),
    path(
        "tasks/<pid:task_id>/langgraph/checkpoints",
        langgraph_api.checkpoints,
        name="api-langgraph-checkpoints",
    ),
    path("tasks/<pid:task_id>/langgraph/writes", langgraph_api.writes, name="api-langgraph-writes"),
    path("tasks/<pid:task_id>/langgraph/copy", langgraph_api.copy, name="api-langgraph-copy"),
    path("tasks/<pid:task_id>/langgraph/prune", langgraph_api.prune, name="api-langgraph-prune"),
    path("langgraph/runs/delete", langgraph_api.delete_runs, name="api-langgraph-delete-runs"),
    # The same, a thread named in the query or body: any string LangGraph takes.
    path(
        "langgraph/checkpoints",
        langgraph_api.thread_checkpoints,
        name="api-langgraph-thread-checkpoints",
    ),
    path("langgraph/writes", langgraph_api.thread_writes, name="api-langgraph-thread-writes"),
    path(
        "langgraph/threads/delete",
        langgraph_api.thread_delete,
        name="api-langgraph-thread-delete",
    ),
    path("langgraph/threads/copy", langgraph_api.thread_copy, name="api-langgraph-thread-copy"),
    path("langgraph/threads/prune", langgraph_api.thread_prune, name="api-langgraph-thread-prune"),
]
