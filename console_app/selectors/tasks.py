"""What the task inspector reads: a page of checkpoints, and the task's runs and effects."""

from __future__ import annotations

from itertools import pairwise

from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from tasks_app.models import Task
from tasks_app.store import TaskStateStore
from tenancy_app.models import Tenant


def checkpoint_rows(
    store: TaskStateStore, task_id: str, before_seq: int | None, limit: int
) -> list:
    """Up to `limit` checkpoints, newest first (bodies not loaded), each with `previous_id`."""
    checkpoints = store.list_checkpoints(task_id).defer("state").order_by("-seq")
    if before_seq is not None:
        checkpoints = checkpoints.filter(seq__lt=before_seq)
    checkpoints = list(checkpoints[:limit])
    # The row after each one (one more is read than shown) is its predecessor.
    for newer, previous in pairwise(checkpoints):
        newer.previous_id = previous.checkpoint_id
    return checkpoints


def related_work(tenant: Tenant, actor: Actor, task: Task, limit: int) -> tuple[list, list, list]:
    """The task's newest runs and effects (up to `limit` each) and its completed nodes."""
    effects = list(
        EffectStore(tenant, actor).list_effects().filter(run__task=task).order_by("-id")[:limit]
    )
    run_store = RunStateStore(tenant, actor)
    runs = list(run_store.list_runs(task_id=task.task_id).order_by("-id")[:limit])
    done_at = run_store.node_finish_order(task_id=task.task_id)
    # In the order the runs did them (node executions); nodes no run recorded come last.
    completed_nodes = sorted(
        task.completed_nodes, key=lambda node: (node not in done_at, done_at.get(node), node)
    )
    return runs, effects, completed_nodes
