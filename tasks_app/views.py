"""Console pages for durable tasks: list, inspector, checkpoint viewer, checkpoint diff."""

from __future__ import annotations

import difflib
from itertools import pairwise

from django import forms
from django.http import Http404
from django.views.decorators.http import require_GET

from audit_app.actor import Actor
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from stateroom.errors import NotFound
from stateroom.htmx import render_page
from stateroom.jsonview import diff, pretty
from stateroom.pages import keyset_page, parse_cursor
from tenancy_app.access import require_role
from tenancy_app.models import Role

from .models import TaskStatus
from .store import TaskStateStore

CHECKPOINTS_PAGE = 50
RELATED_PAGE = 50


class TaskFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *TaskStatus.choices], required=False)


def _store(request) -> TaskStateStore:
    return TaskStateStore(request.tenant, Actor.from_request(request))


@require_role(Role.SUPPORT)
@require_GET
def task_list(request):
    form = TaskFilterForm(request.GET)
    page = None
    if form.is_valid():
        tasks = _store(request).list_tasks(status=form.cleaned_data["status"] or None)
        page = keyset_page(tasks, request.GET)
    query = request.GET.copy()
    query.pop("cursor", None)
    return render_page(
        request,
        "tasks/list.html",
        {"nav": "tasks", "form": form, "page": page, "query": query.urlencode()},
        fragment="results",
    )


@require_role(Role.SUPPORT)
@require_GET
def task_detail(request, task_id: str):
    """The task inspector; `?before_seq=` pages the checkpoint list (bodies are not loaded)."""
    store = _store(request)
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


@require_role(Role.SUPPORT)
@require_GET
def checkpoint(request, task_id: str, checkpoint_id: str):
    store = _store(request)
    try:
        found = store.get_checkpoint(task_id=task_id, checkpoint_id=checkpoint_id)
    except NotFound as exc:
        raise Http404("No such checkpoint") from exc
    previous = (
        store.list_checkpoints(task_id)
        .filter(seq__lt=found.seq)
        .order_by("-seq")
        .values_list("checkpoint_id", flat=True)
        .first()
    )
    return render_page(
        request,
        "tasks/checkpoint.html",
        {"nav": "tasks", "task": found.task, "checkpoint": found, "previous_id": previous},
    )


@require_role(Role.SUPPORT)
@require_GET
def checkpoint_diff(request, task_id: str):
    """`?a=<checkpoint_id>&b=<checkpoint_id>`: key-path changes and a line diff of pretty JSON."""
    store = _store(request)
    try:
        old = store.get_checkpoint(task_id=task_id, checkpoint_id=request.GET.get("a", ""))
        new = store.get_checkpoint(task_id=task_id, checkpoint_id=request.GET.get("b", ""))
    except NotFound as exc:
        raise Http404("No such checkpoint") from exc
    if old.seq > new.seq:
        old, new = new, old
    deleted = old.body_deleted_at is not None or new.body_deleted_at is not None
    lines = (
        []
        if deleted
        else list(
            difflib.unified_diff(
                pretty(old.state).splitlines(),
                pretty(new.state).splitlines(),
                fromfile=f"#{old.seq} {old.checkpoint_id}",
                tofile=f"#{new.seq} {new.checkpoint_id}",
                lineterm="",
            )
        )
    )
    return render_page(
        request,
        "tasks/diff.html",
        {
            "nav": "tasks",
            "task": new.task,
            "old": old,
            "new": new,
            "deleted": deleted,
            "changes": [] if deleted else diff(old.state, new.state),
            "lines": [(_line_kind(line), line) for line in lines],
        },
    )


def _line_kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "same")
