"""Console pages for durable tasks: list, checkpoint viewer, checkpoint diff.

The task inspector shows the task's runs and effects too: console_app.views.tasks.
"""

from __future__ import annotations

import difflib

from django import forms
from django.http import Http404
from django.views.decorators.http import require_GET

from audit_app.actor import Actor
from stateroom.errors import NotFound
from stateroom.htmx import render_page
from stateroom.jsonview import diff, pretty
from stateroom.pages import keyset_page
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

from .models import TaskStatus
from .store import TaskStateStore


class TaskFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *TaskStatus.choices], required=False)


def _store(request) -> TaskStateStore:
    return TaskStateStore(request.tenant, Actor.from_request(request))


@require_permission(Permission.READ)
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


@require_permission(Permission.READ)
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


@require_permission(Permission.READ)
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
