"""The content registry: every content class of every owner, and what one session holds.

Each owning store declares its classes (`stateroom.content.ContentClass`)
and removes its own rows; this module only knows who to ask. A session's
content reaches over five domains and the audit log:

- the session itself (items, metadata) -> `SessionStore`;
- its runs (created in it, or ever attached to it) -> `RunStateStore`
  (event payloads, errors), `ApprovalStore` (arguments, reasons),
  `EffectStore` (requests, results, errors);
- the tasks those runs worked on -> `TaskStateStore` (checkpoint bodies,
  objective, constraints), except a task that also serves a session on legal
  hold: its content stays with the hold;
- the detached payloads of the audit events about all of these -> `AuditStore`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from approvals_app.store import ApprovalStore
from audit_app.store import AuditStore
from effects_app.store import EffectStore
from runs_app.store import RunStateStore
from sessions_app.models import Session
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.content import RUN, SESSION, SUBJECT, TASK, ContentClass
from tasks_app.store import TaskStateStore
from tenancy_app.models import Tenant


@dataclass
class Owners:
    """The stores that own content, built for one tenant, actor and clock."""

    sessions: SessionStore
    runs: RunStateStore
    tasks: TaskStateStore
    approvals: ApprovalStore
    effects: EffectStore
    audit: AuditStore

    @classmethod
    def build(cls, tenant: Tenant, actor: Actor, clock: Callable[[], datetime]) -> Owners:
        return cls(
            sessions=SessionStore(tenant, actor, clock=clock),
            runs=RunStateStore(tenant, actor, clock=clock),
            tasks=TaskStateStore(tenant, actor, clock=clock),
            approvals=ApprovalStore(tenant, actor, clock=clock),
            effects=EffectStore(tenant, actor, clock=clock),
            audit=AuditStore(tenant, actor, clock=clock),
        )

    def registry(self) -> list[tuple[ContentClass, Any]]:
        """(class, owning store) of every content class, in deletion order:
        what people read first goes first, the audit payloads last."""
        return [
            (cls, store)
            for store in (
                self.sessions,
                self.runs,
                self.tasks,
                self.approvals,
                self.effects,
                self.audit,
            )
            for cls in store.CONTENT
        ]


def content_classes() -> list[ContentClass]:
    """Every content class, in deletion order (the keys of plans, counts and receipts)."""
    return [
        cls
        for store in (
            SessionStore,
            RunStateStore,
            TaskStateStore,
            ApprovalStore,
            EffectStore,
            AuditStore,
        )
        for cls in store.CONTENT
    ]


CLASS_NAMES: tuple[str, ...] = tuple(cls.name for cls in content_classes())
CLASSES: dict[str, ContentClass] = {cls.name: cls for cls in content_classes()}


@dataclass
class Scope:
    """What of one session's world holds its content: the containers of each kind."""

    session: Session
    runs: list[tuple[int, str]] = field(default_factory=list)  # (pk, run_id)
    tasks: list[tuple[int, str]] = field(default_factory=list)  # (pk, task_id)
    approvals: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)

    def containers(self, kind: str) -> list[Any]:
        if kind == SESSION:
            return [self.session.pk]
        if kind == RUN:
            return [pk for pk, _ in self.runs]
        if kind == TASK:
            return [pk for pk, _ in self.tasks]
        if kind == SUBJECT:
            return [
                ("session", self.session.session_id),
                *(("run", run_id) for _, run_id in self.runs),
                *(("task", task_id) for _, task_id in self.tasks),
                *(("approval", approval_id) for approval_id in self.approvals),
                *(("effect", effect_id) for effect_id in self.effects),
            ]
        raise ValueError(f"unknown container kind {kind!r}")

    def audit_subjects(self) -> list[tuple[str, str]]:
        return self.containers(SUBJECT)


def resolve(owners: Owners, session: Session) -> Scope:
    """The session's runs, their tasks (minus held ones), approvals and effects, read now."""
    attached = owners.sessions.attachments(session).values_list("run_id", flat=True)
    runs = owners.runs.session_runs(session_pk=session.pk, attached_run_ids=attached)
    held = owners.runs.tasks_of_held_sessions()
    task_pks = {run.task_id for run in runs if run.task_id and run.task_id not in held}
    run_pks = [run.pk for run in runs]
    return Scope(
        session=session,
        runs=[(run.pk, run.run_id) for run in runs],
        tasks=owners.tasks.pks_of(task_pks),
        approvals=owners.approvals.approval_ids_of_runs(run_pks),
        effects=owners.effects.effect_ids_of_runs(run_pks),
    )


def content_left(
    owners: Owners,
    scope: Scope,
    names: list[str],
    swept: Mapping[tuple[str, Any], Any] | None = None,
) -> dict[str, int]:
    """Rows of each class still holding content in the scope, asked of their owners.

    `swept`: (class, container) -> the key a sweep removed every row up to;
    for an `append_only` class those containers are counted past it only.
    """
    counts = {}
    for cls, store in owners.registry():
        if cls.name not in names:
            continue
        containers = scope.containers(cls.container)
        after = {}
        if cls.append_only and swept:
            after = {c: swept[cls.name, c] for c in containers if (cls.name, c) in swept}
        if after:
            counts[cls.name] = store.content_left(cls.name, containers, after=after)
        else:
            counts[cls.name] = store.content_left(cls.name, containers)
    return counts


def work(owners: Owners, scope: Scope, names: list[str]) -> Iterator[tuple[ContentClass, Any, Any]]:
    """(class, owner, container) of every container to sweep, in deletion order."""
    for cls, store in owners.registry():
        if cls.name in names:
            for container in scope.containers(cls.container):
                yield cls, store, container
