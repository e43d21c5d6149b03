"""The task inspector: the task, its checkpoints, and the runs and effects that worked on it."""

from __future__ import annotations

from itertools import pairwise

from django.http import Http404
from django.views.decorators.http import require_GET

from audit_app.actor import Actor
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from stateroom.errors import NotFound
from stateroom.htmx import render_page
from stateroom.pages import parse_cursor
from tasks_app.store import TaskStateStore
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

CHECKPOINTS_PAGE = 50
RELATED_PAGE = 50


@require_permission(Permission.READ)
@require_GET
def task_detail(request, task_id: str):
    """The task inspector; `?before_seq=` pages the checkpoint list (bodies are not loaded)."""
    store = TaskStateStore(request.tenant, Actor.from_request(request))
    try:
        task = store.load(task_id)
    except NotFound as exc:
        raise Http404("No such task") from exc
    checkpoints = store.list_checkpoints(task_id).defer("state").order_by("-seq")
    before_seq = parse_cursor(request.GET.get("before_seq"))
    if before_seq is not None:
        checkpoints = checkpoints.filter(seq__lt=before_seq)
    checkpoints = list(checkpoints[: CHECKPOINTS_PAGE + 1])
    # The row after each one (one more is read than shown) is its predecessor.
    for newer, previous in pairwise(checkpoints):
        newer.previous_id = previous.checkpoint_id
    completed, pending = len(task.completed_nodes), len(task.pending_nodes)
    effects = (
        EffectStore(request.tenant, store.actor)
        .list_effects()
        .filter(run__task=task)
        .order_by("-id")[: RELATED_PAGE + 1]
    )
    runs = RunStateStore(request.tenant, store.actor).list_runs(task_id=task_id).order_by("-id")
    return render_page(
        request,
        "tasks/detail.html",
        {
            "nav": "tasks",
            "task": task,
            "completed": completed,
            "total_nodes": completed + pending,
            "checkpoints": checkpoints[:CHECKPOINTS_PAGE],
            "older_seq": (
                checkpoints[CHECKPOINTS_PAGE - 1].seq
                if len(checkpoints) > CHECKPOINTS_PAGE
                else None
            ),
            "effects": list(effects),
            "runs": list(runs[: RELATED_PAGE + 1]),
            "related_page": RELATED_PAGE,
        },
        fragment="checkpoint-rows" if "before_seq" in request.GET else None,
    )
