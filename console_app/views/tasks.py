"""The task inspector: the task, its checkpoints, and the runs and effects that worked on it."""

from __future__ import annotations

from itertools import pairwise

from django.http import Http404
from django.views.decorators.http import require_GET

from approvals_app.store import ApprovalStore
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from stateroom.errors import NotFound
from stateroom.htmx import render_page
from stateroom.pages import parse_cursor
from tasks_app.langgraph_store import GraphThreadStore
from tasks_app.store import TaskStateStore
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

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
    run_store = RunStateStore(request.tenant, store.actor)
    runs = list(run_store.list_runs(task_id=task_id).order_by("-id")[: RELATED_PAGE + 1])
    done_at = run_store.node_finish_order(task_id=task_id)
    # In the order the runs did them (node executions); nodes no run recorded come last.
    completed_nodes = sorted(
        task.completed_nodes, key=lambda node: (node not in done_at, done_at.get(node), node)
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
