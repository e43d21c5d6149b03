"""Task pages: list, checkpoint viewer, checkpoint diff, a LangGraph thread's checkpoint and diff,
and the task inspector with the task's runs and effects.
"""

from __future__ import annotations

import difflib

from django.http import Http404
from django.views.decorators.http import require_GET

from approvals_app.store import ApprovalStore
from console_app.forms.tasks import TaskFilterForm
from console_app.selectors.tasks import checkpoint_rows, related_work
from stateroom.actor import Actor
from stateroom.errors import NotFound
from stateroom.htmx import render_page
from stateroom.jsonview import diff, pretty
from stateroom.pages import keyset_page, parse_cursor
from tasks_app.graph_values import show
from tasks_app.langgraph_store import INTERRUPT_CHANNEL, CheckpointTuple, GraphThreadStore
from tasks_app.store import TaskStateStore
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


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
        "console/tasks/list.html",
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
        "console/tasks/checkpoint.html",
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
        "console/tasks/diff.html",
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


# --- LangGraph threads -------------------------------------------------------------
def _graph_checkpoint(store: GraphThreadStore, task_id: str, ns: str, checkpoint_id: str):
    rows, _ = store.list_checkpoints(
        thread_id=task_id, checkpoint_ns=ns, checkpoint_id=checkpoint_id, limit=1
    )
    if not rows:
        raise Http404("No such checkpoint")
    return rows[0]


def _shown_values(row: CheckpointTuple) -> list[dict]:
    return [{**item, "shown": show(item)} for item in row.channel_values]


def _shown_writes(row: CheckpointTuple) -> list[dict]:
    return [
        {**item, "shown": show(item), "interrupt": item["channel"] == INTERRUPT_CHANNEL}
        for item in row.pending_writes
    ]


def _comparable(row: CheckpointTuple) -> dict:
    """What the diff compares: values as shown, versions, what each node saw, metadata."""
    values = {}
    for item in row.channel_values:
        shown = show(item)
        values[item["channel"]] = (
            shown.value if shown.readable else f"<{shown.type}, {shown.size} bytes>"
        )
    return {
        "channel_values": values,
        "channel_versions": row.checkpoint.get("channel_versions", {}),
        "versions_seen": row.checkpoint.get("versions_seen", {}),
        "metadata": row.metadata,
    }


@require_permission(Permission.READ)
@require_GET
def graph_checkpoint(request, task_id: str, checkpoint_id: str):
    """One LangGraph checkpoint: its parent, metadata, channel values, pending writes, interrupts."""
    store = GraphThreadStore(request.tenant, Actor.from_request(request))
    try:
        task = store.thread(task_id)
    except NotFound as exc:
        raise Http404("No such task") from exc
    row = _graph_checkpoint(store, task_id, request.GET.get("ns", ""), checkpoint_id)
    writes = _shown_writes(row)
    return render_page(
        request,
        "console/tasks/graph_checkpoint.html",
        {
            "nav": "tasks",
            "task": task,
            "row": row,
            "values": _shown_values(row),
            "writes": writes,
            "interrupts": [w for w in writes if w["interrupt"]],
        },
    )


@require_permission(Permission.READ)
@require_GET
def graph_diff(request, task_id: str):
    """`?ns=&a=<checkpoint_id>&b=<checkpoint_id>`: what changed between two checkpoints."""
    store = GraphThreadStore(request.tenant, Actor.from_request(request))
    try:
        task = store.thread(task_id)
    except NotFound as exc:
        raise Http404("No such task") from exc
    ns = request.GET.get("ns", "")
    old = _graph_checkpoint(store, task_id, ns, request.GET.get("a", ""))
    new = _graph_checkpoint(store, task_id, ns, request.GET.get("b", ""))
    if old.checkpoint_id > new.checkpoint_id:
        old, new = new, old
    before, after = _comparable(old), _comparable(new)
    lines = difflib.unified_diff(
        pretty(before).splitlines(),
        pretty(after).splitlines(),
        fromfile=old.checkpoint_id,
        tofile=new.checkpoint_id,
        lineterm="",
    )
    return render_page(
        request,
        "console/tasks/graph_diff.html",
        {
            "nav": "tasks",
            "task": task,
            "old": old,
            "new": new,
            "changes": diff(before, after),
            "lines": [(_line_kind(line), line) for line in lines],
        },
    )


CHECKPOINTS_PAGE = 50
GRAPH_PAGE = 50
RELATED_PAGE = 50


def _failure(task, runs) -> dict | None:
    """Why a failed task failed: the error of its newest failed run."""
    if task.status != "failed":
        return None
    for run in runs:
        if run.status == "failed":
            error = run.error if isinstance(run.error, dict) else {}
            message = error.get("message") or error.get("code") or "no reason recorded"
            return {"run_id": run.run_id, "message": str(message), "code": error.get("code", "")}
    return {"run_id": None, "message": "no run of this task recorded a failure", "code": ""}


def _waits_for(task, runs, approvals: ApprovalStore) -> list[dict]:
    """What a waiting task waits for: its pending approvals, and runs that wait on a person.

    The approvals the runtime's state names are read from the approvals store
    at its clock (one query): one that can no longer be decided (expired,
    decided, voided) is shown with its status, not as awaiting a decision.
    """
    if task.status != "waiting":
        return []
    found = [{"kind": "approval", "id": a} for a in task.pending_approvals]
    for run in runs:
        if run.status == "waiting_approval" and run.pending_approval_id:
            if run.pending_approval_id not in task.pending_approvals:
                found.append({"kind": "approval", "id": run.pending_approval_id})
        elif run.status == "suspended":
            found.append({"kind": "resume", "id": run.run_id})
    ids = [w["id"] for w in found if w["kind"] == "approval"]
    if ids:
        statuses = {
            approval.approval_id: approval.status
            for approval in approvals.list_approvals()
            .filter(approval_id__in=ids)
            .select_related(None)
            .only("approval_id", "status", "expires_at", "decided_at")
        }
        for w in found:
            if w["kind"] == "approval":
                w["status"] = statuses.get(w["id"], "unknown")
    return found


@require_permission(Permission.READ)
@require_GET
def task_detail(request, task_id: str):
    """The task inspector; `?before_seq=` pages the checkpoint list (bodies are not loaded),
    `?graph_before=` the LangGraph checkpoints when the task is a LangGraph thread."""
    store = TaskStateStore(request.tenant, Actor.from_request(request))
    try:
        task = store.load(task_id)
    except NotFound as exc:
        raise Http404("No such task") from exc
    checkpoints = checkpoint_rows(
        store, task_id, parse_cursor(request.GET.get("before_seq")), CHECKPOINTS_PAGE + 1
    )
    completed, pending = len(task.completed_nodes), len(task.pending_nodes)
    runs, effects, completed_nodes = related_work(
        request.tenant, store.actor, task, RELATED_PAGE + 1
    )
    graph = GraphThreadStore(request.tenant, store.actor).history(
        task, cursor=parse_cursor(request.GET.get("graph_before")), limit=GRAPH_PAGE
    )
    fragment = None
    if "before_seq" in request.GET:
        fragment = "checkpoint-rows"
    elif "graph_before" in request.GET:
        fragment = "graph-rows"
    return render_page(
        request,
        "console/tasks/detail.html",
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
            "effects": effects,
            "runs": runs,
            "related_page": RELATED_PAGE,
            "completed_nodes": completed_nodes,
            "failure": _failure(task, runs),
            "waits_for": _waits_for(task, runs, ApprovalStore(request.tenant, store.actor)),
            "graph": graph[:GRAPH_PAGE],
            "graph_older": graph[GRAPH_PAGE - 1].pk if len(graph) > GRAPH_PAGE else None,
            "graph_root_ids": [
                row.checkpoint_id for row in graph[:GRAPH_PAGE] if not row.checkpoint_ns
            ],
        },
        fragment=fragment,
    )
