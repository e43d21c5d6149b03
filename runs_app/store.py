"""RunStateStore: the current facts of one execution (seed 000).

Every change of a run is a compare-and-set on its `version`: one conditional
`UPDATE … WHERE tenant AND run_id AND version = expected AND <status, claim>
RETURNING *`. Exactly one of N racing writers matches the row; the others
update 0 rows and only then is the row read, to say why (404, stale version,
illegal transition, live claim of another worker). Each successful CAS writes
one `RunTransition` row, so the transitions of a run are its version history.

Runtime writes (create, CAS, events, node executions) are not audited; the
actions of people and of the system (`run.cancelled`, `run.deadline_exceeded`)
are, in the same transaction.

Claims: a worker that claims a run (`claim`) is its only runtime writer until
the lease ends. While the claim is live, every runtime write to the run (its
compare-and-set, events, and what builds on it: approval requests, effects)
must name that worker; another worker or none is 409 `run_claimed` and
nothing is written. The check is part of the write's own statement (or made
under the run's row lock), so a claim taken concurrently either comes first
and refuses the write, or waits for it. People's and the system's changes
(decisions, cancel, suspend, resume, expiry, the deadline sweep) are not held
back by claims. A run that waits for a person (`waiting_approval`,
`suspended`) or has ended is held by nobody: the change that puts it there
drops the claim, so whoever continues the run claims it afresh.

Once a deletion of its session's content is requested the run is fenced
(`content_fenced_at`): every runtime write to it (compare-and-set, claim,
events, node executions, and what builds on it: approval requests, effects)
is 409 `content_deleted`, before any other 409 (`run_claimed` included).
A person's or the system's cancel still ends it. Its content (`CONTENT`:
event payloads, errors) is removed through `redact_content` by the lifecycle
orchestrator.

Runs know nothing of approvals (approvals build on runs). A run that ends
waits on nothing: this store clears its `pending_approval_id`, and whatever
ends a run for the runtime, a person or a sweep goes through
`actions_app.runs.RunActions`, which also withdraws the run's pending
approval in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection
from django.db.models import Case, DateTimeField, F, Max, Q, QuerySet, When
from django.db.models.expressions import CombinedExpression, Value
from django.db.models.functions import Greatest

from outbox_app.relay import enqueue
from sessions_app.models import Session
from stateroom.canonical import MAX_SAFE_INTEGER
from stateroom.content import RUN, Batch, ContentClass, content_class, redact_in_key_order
from stateroom.errors import Conflict, ContentDeleted, NotFound, Unprocessable, field_path
from stateroom.ids import (
    MAX_WORKER_LENGTH,
    PUBLIC_ID_RULE,
    is_valid_public_id,
    new_public_id,
)
from stateroom.leases import DEFAULT_CLAIM_LEASE_SECONDS, MAX_CLAIM_LEASE_SECONDS
from stateroom.reasons import MAX_REASON_LENGTH, check_reason  # noqa: F401 (re-exported)
from stateroom.rows import from_row
from stateroom.sql import columns, db_value, hot_cursor
from stateroom.store import BaseStore
from tasks_app.models import Task, TaskCheckpoint
from tenancy_app.models import RuntimeToken

from .claims import claim_condition, claimed_elsewhere
from .models import (
    RUN_TRANSITIONS,
    TERMINAL_RUN_STATUSES,
    NodeExecution,
    NodeStatus,
    Run,
    RunEvent,
    RunStatus,
    RunTransition,
)
from .webhooks import notify_run_control

# Keys `compare_and_set` accepts in `changes`.
RUN_CHANGE_FIELDS = frozenset(
    {
        "status",
        "turn_index",
        "active_agent",
        "current_node_id",
        "token_used",
        "cost_used",
        "pending_approval_id",
        "last_checkpoint_id",
        "error",
    }
)
# The limits of a run's fields, for every caller: the API's serializers take theirs from here.
STRING_LIMITS = {
    "active_agent": 200,
    "current_node_id": 200,
    "pending_approval_id": 128,
    "last_checkpoint_id": 128,
}
_COUNTERS = ("turn_index", "token_used")
MAX_COUNTER = MAX_SAFE_INTEGER  # I-JSON: every JSON reader keeps it exactly
# cost_used is DECIMAL(18, 6) (Run.cost_used): what the column would round (a 7th
# decimal place) or cannot hold (13 digits before the point) is refused, by
# `cost_value`; the API's field calls it too (runs_app.api.CostField).
COST_MAX_DIGITS = Run._meta.get_field("cost_used").max_digits
COST_DECIMAL_PLACES = Run._meta.get_field("cost_used").decimal_places
_MAX_COST_EXPONENT = COST_MAX_DIGITS - COST_DECIMAL_PLACES
_MAX_COST = Decimal(10) ** _MAX_COST_EXPONENT
MAX_EVENTS_PER_APPEND = 1000
MAX_EVENT_TYPE_LENGTH = 64
# Why a person cancelled, suspended or resumed a run: `stateroom.reasons` (one rule).
NON_TERMINAL_STATUSES = tuple(s for s in RunStatus.values if s not in TERMINAL_RUN_STATUSES)
# Statuses in which no worker works on a run: moving there drops the claim.
UNCLAIMED_STATUSES = frozenset(
    {RunStatus.WAITING_APPROVAL, RunStatus.SUSPENDED, *TERMINAL_RUN_STATUSES}
)
_NO_CLAIM = {"claimed_by": "", "claim_until": None}
_NOT_FENCED = ('"content_fenced_at" IS NULL', [])

RUN_EVENT_PAYLOADS = "run_event_payloads"
RUN_ERRORS = "run_errors"
RUN_TRANSITION_ERRORS = "run_transition_errors"
NODE_ERRORS = "node_errors"
_RUN_ERRORS_KEPT = (
    "The run row (ids, status, version, counters, times, claim) and its status history: "
    "what happened to the run, not what it said."
)
CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=RUN_EVENT_PAYLOADS,
        label="Run event payloads",
        table=RunEvent._meta.db_table,
        fields=("payload",),
        container=RUN,
        removal="fields cleared",
        retention="run_events_days",
        kept="Each event's run, seq, type, node and time: the run's history without its data.",
    ),
    ContentClass(
        name=RUN_ERRORS,
        label="Run errors",
        table=Run._meta.db_table,
        fields=("error",),
        container=RUN,
        removal="fields cleared",
        retention="run_events_days",
        kept=_RUN_ERRORS_KEPT,
    ),
    ContentClass(
        name=RUN_TRANSITION_ERRORS,
        label="Errors in the runs' status history",
        table=RunTransition._meta.db_table,
        fields=("changes.error",),
        container=RUN,
        removal="fields cleared",
        retention="run_events_days",
        kept="Each transition's version, statuses, other changed fields, actor and time.",
    ),
    ContentClass(
        name=NODE_ERRORS,
        label="Node execution errors",
        table=NodeExecution._meta.db_table,
        fields=("error",),
        container=RUN,
        removal="fields cleared",
        retention="run_events_days",
        kept="Each node attempt's node, attempt number, status and times.",
    ),
)


def cost_value(value: Any) -> Decimal:
    """`cost_used` exactly as the column keeps it; ValueError saying why when it cannot be.

    Decimal places are counted as written (`"0.1000000"` has 7), as the API always did.
    """
    try:
        cost = Decimal(str(value))
    except (InvalidOperation, ValueError):
        cost = None
    if isinstance(value, bool) or cost is None or not cost.is_finite():
        raise ValueError("must be a decimal number")
    if not 0 <= cost < _MAX_COST:
        raise ValueError(f"must be from 0 to less than 10^{_MAX_COST_EXPONENT}")
    exponent = cost.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > COST_DECIMAL_PLACES:
        raise ValueError(f"at most {COST_DECIMAL_PLACES} decimal places")
    return cost


def allowed_from(target: str) -> list[str]:
    """The statuses a run may be in for a CAS that sets `target` (staying put included)."""
    return [s for s in NON_TERMINAL_STATUSES if s == target or target in RUN_TRANSITIONS[s]]


_RUNS = Run._meta.db_table
_TRANSITIONS = RunTransition._meta.db_table
_RUN_COLUMNS = columns(Run)
_RUN_WIDTH = len(Run._meta.concrete_fields)
_SESSION_WIDTH = len(Session._meta.concrete_fields)
_GET_RUN = (
    f"SELECT {columns(Run, 'r')}, {columns(Session, 's')}, {columns(Task, 'k')} FROM {_RUNS} r"
    f" LEFT JOIN {Session._meta.db_table} s ON s.id = r.session_id"
    f" LEFT JOIN {Task._meta.db_table} k ON k.id = r.task_id"
    " WHERE r.tenant_id = %s AND r.run_id = %s"
)
# The public ids of a changed run's session and task, for its API answer.
_PUBLIC_IDS = (
    f"(SELECT session_id FROM {Session._meta.db_table} WHERE id = r.session_id),"
    f" (SELECT task_id FROM {Task._meta.db_table} WHERE id = r.task_id)"
)


@dataclass(frozen=True)
class Seen:
    """What a refused compare-and-set read of the run, in the same statement."""

    version: int
    status: str
    content_fenced_at: datetime | None
    claimed_by: str
    claim_until: datetime | None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES


_SEEN_COLUMNS = '"version", "status", "content_fenced_at", "claimed_by", "claim_until"'
_SEEN_WIDTH = 5


def _run_from(row: Sequence[Any]) -> Run:
    run = from_row(Run, row[:_RUN_WIDTH])
    run.session_public_id, run.task_public_id = row[_RUN_WIDTH:]
    return run


@dataclass(frozen=True)
class Transition:
    """The RunTransition row an update writes: what changed, who (and which worker), when."""

    changes: dict[str, Any]
    worker: str | None
    now: datetime


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


# `json.dumps(changes, cls=DjangoJSONEncoder)`, the encoder made once.
_encode_changes = DjangoJSONEncoder().encode
# A run's fields by name and by attname, for the parameters of an update.
_RUN_FIELDS = {
    **{field.attname: field for field in Run._meta.concrete_fields},
    **{field.name: field for field in Run._meta.concrete_fields},
}


@cache
def _status_in(statuses: tuple[str, ...]) -> str:
    if not statuses:
        return "1 = 0"
    unknown = set(statuses) - set(RunStatus.values)
    if unknown:  # never: only the state machine's statuses are written into SQL
        raise ValueError(f"not run statuses: {sorted(unknown)}")
    return '"status" IN (' + ", ".join("'" + status + "'" for status in statuses) + ")"


@cache
def _update_text(
    set_names: tuple[str, ...],
    increment_names: tuple[str, ...],
    where_columns: tuple[str, ...],
    conditions: tuple[str, ...],
    bump_version: bool,
    with_transition: bool,
) -> str:
    """`_update_sql`'s text for one shape of update (every value a `%s`)."""
    qn = connection.ops.quote_name
    assignments = [f"{qn(_RUN_FIELDS[name].column)} = %s" for name in set_names]
    assignments += [f"{qn(name)} = {qn(name)} + %s" for name in increment_names]
    if bump_version:
        assignments.append('"previous_status" = "status", "version" = "version" + 1')
    clauses = ['"tenant_id" = %s', *(f"{qn(column)} = %s" for column in where_columns)]
    clauses += conditions
    sql = (
        f"r AS (UPDATE {_RUNS} SET {', '.join(assignments)} "
        f"WHERE {' AND '.join(clauses)} RETURNING {_RUN_COLUMNS})"
    )
    if with_transition:
        sql += (
            f", t AS (INSERT INTO {_TRANSITIONS} (tenant_id, run_id, version,"
            " from_status, to_status, changes, actor_label, created_at)"
            " SELECT r.tenant_id, r.id, r.version, r.previous_status, r.status, %s::jsonb, %s, %s"
            " FROM r)"
        )
    return sql


class RunStateStore(BaseStore):
    # --- reads ------------------------------------------------------------
    def _runs(self) -> QuerySet[Run]:
        return Run.objects.filter(tenant=self.tenant)

    def get(self, run_id: str) -> Run:
        """The run with its session and task (as `select_related` would): one prepared query."""
        with hot_cursor(alone=True) as cursor:
            cursor.execute(_GET_RUN, [self.tenant.pk, run_id])
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such run.", details={"run_id": run_id})
        run = from_row(Run, row[:_RUN_WIDTH])
        session_row = row[_RUN_WIDTH : _RUN_WIDTH + _SESSION_WIDTH]
        task_row = row[_RUN_WIDTH + _SESSION_WIDTH :]
        run.session = from_row(Session, session_row) if run.session_id else None
        run.task = from_row(Task, task_row) if run.task_id else None
        run.unclaimed_since = run.waiting_for_worker_since(now=self.now(), grace=self.grace())
        return run

    def grace(self) -> timedelta:
        """How long a running run may go without a live claim before it is flagged."""
        return timedelta(seconds=self.tenant.unclaimed_run_warning_seconds)

    def _waiting(self, runs: QuerySet[Run], *, only: bool = False) -> QuerySet[Run]:
        """`runs` annotated `unclaimed_since` (`Run.waiting_for_worker_since`, in SQL);
        `only`: just the runs it flags (their condition in WHERE, on the status index)."""
        cutoff = self.now() - self.grace()
        held_until = Case(When(claimed_by="", then=Value(None)), default=F("claim_until"))
        waiting = Q(status=RunStatus.RUNNING, updated_at__lte=cutoff) & (
            Q(claimed_by="") | Q(claim_until__isnull=True) | Q(claim_until__lte=cutoff)
        )
        if only:
            runs = runs.filter(waiting)
        return runs.annotate(
            # PostgreSQL's GREATEST skips NULL: a run never claimed counts from updated_at.
            unclaimed_since=Case(
                When(waiting, then=Greatest("updated_at", held_until)),
                default=Value(None),
                output_field=DateTimeField(),
            )
        )

    def list_runs(
        self,
        *,
        status: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        unclaimed: bool = False,
    ) -> QuerySet[Run]:
        """Unordered; callers keyset by id. Each run carries `unclaimed_since`; `unclaimed`
        keeps only the runs it flags (running, no live claim for the tenant's grace)."""
        runs = self._waiting(self._runs().select_related("session", "task"), only=unclaimed)
        if status:
            if status not in RunStatus.values:
                raise Unprocessable(
                    "Unknown run status.",
                    details={"status": [f"must be one of {', '.join(RunStatus.values)}"]},
                )
            runs = runs.filter(status=status)
        if session_id:
            runs = runs.filter(session__session_id=session_id)
        if task_id:
            runs = runs.filter(task__task_id=task_id)
        return runs

    def transitions(self, run_id: str) -> QuerySet[RunTransition]:
        run = self.get(run_id)
        return RunTransition.objects.filter(tenant=self.tenant, run=run).order_by("version")

    def last_control(self, run: Run) -> RunTransition | None:
        """The run's latest cancel, suspend or resume by a person (or the system): the
        step whose changes carry a `reason` (`_by_person`). One query."""
        return (
            RunTransition.objects.filter(tenant=self.tenant, run=run, changes__has_key="reason")
            .order_by("-version")
            .first()
        )

    def node_executions(self, run_id: str) -> QuerySet[NodeExecution]:
        run = self.get(run_id)
        return NodeExecution.objects.filter(tenant=self.tenant, run=run).order_by(
            "started_at", "id"
        )

    def node_finish_order(self, *, task_id: str) -> dict[str, datetime]:
        """When each node of a task's runs first succeeded: {node_id: finished_at}.

        A task keeps its completed nodes as a set; the runs' node executions
        say in which order they were really done.
        """
        rows = (
            NodeExecution.objects.filter(
                tenant=self.tenant, run__task__task_id=task_id, status=NodeStatus.SUCCEEDED
            )
            .order_by("finished_at", "id")
            .values_list("node_id", "finished_at")
        )
        order: dict[str, datetime] = {}
        for node_id, finished_at in rows:
            order.setdefault(node_id, finished_at)
        return order

    def get_events(
        self, *, run_id: str, after: int | None = None, limit: int = 50
    ) -> list[RunEvent]:
        """Events with `seq > after`, ascending, at most `limit`."""
        run = self.get(run_id)
        events = RunEvent.objects.filter(tenant=self.tenant, run=run)
        if after is not None:
            events = events.filter(seq__gt=after)
        return list(events.order_by("seq")[:limit])

    # --- create -----------------------------------------------------------
    def create(
        self,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        active_agent: str = "",
        deadline_at: datetime | None = None,
    ) -> Run:
        """A new run in `created`, version 1, with none of another run's transient state.

        Node, tool, approval and budget fields always start empty: a run shares
        a session or a task with earlier runs, never their execution facts.
        """
        # The ids a run names: its own (None: generated), its session's and task's (None
        # or "": none). An id no row can have is 422, like the API's.
        ids = {"run_id": run_id, "session_id": session_id or None, "task_id": task_id or None}
        bad_ids = {
            name: [PUBLIC_ID_RULE]
            for name, value in ids.items()
            if value is not None and not is_valid_public_id(value)
        }
        if bad_ids:
            raise Unprocessable("Invalid " + ", ".join(bad_ids) + ".", details=bad_ids)
        if len(active_agent or "") > STRING_LIMITS["active_agent"]:
            raise Unprocessable(
                "active_agent is too long.",
                details={"active_agent": [f"at most {STRING_LIMITS['active_agent']} characters"]},
            )
        now = self.now()
        if deadline_at is not None and deadline_at <= now:
            raise Unprocessable(
                "deadline_at lies in the past.",
                details={"deadline_at": ["must lie in the future"]},
            )
        with self.atomic():
            session = task = None
            if session_id:
                session = Session.objects.filter(tenant=self.tenant, session_id=session_id).first()
                if session is None:
                    raise NotFound("No such session.", details={"session_id": session_id})
            if task_id:
                task = Task.objects.filter(tenant=self.tenant, task_id=task_id).first()
                if task is None:
                    raise NotFound("No such task.", details={"task_id": task_id})
            if session is not None and session.content_fenced_at is not None:
                raise ContentDeleted("session", session_id=session_id)
            if task is not None and task.content_fenced_at is not None:
                raise ContentDeleted("task", task_id=task_id)
            run_id = run_id or new_public_id("run")
            if self._runs().filter(run_id=run_id).exists():
                raise Conflict("A run with this id exists.", code="run_exists")
            try:
                with self.atomic():
                    run = Run.objects.create(
                        tenant=self.tenant,
                        run_id=run_id,
                        created_by_token_id=(
                            int(self.actor.id) if self.actor.kind == "token" else None
                        ),
                        session=session,
                        task=task,
                        status=RunStatus.CREATED,
                        active_agent=active_agent or "",
                        deadline_at=deadline_at,
                        version=1,
                        created_at=now,
                        updated_at=now,
                    )
            except IntegrityError as exc:
                raise Conflict("A run with this id exists.", code="run_exists") from exc
            self._record_transition(
                run,
                from_status="",
                changes={"status": RunStatus.CREATED, "active_agent": run.active_agent},
                worker=None,
                now=now,
            )
        return run

    # --- compare-and-set --------------------------------------------------
    def compare_and_set(
        self,
        *,
        run_id: str,
        expected_version: int,
        changes: dict[str, Any],
        worker: str | None = None,
        as_runtime: bool = True,
    ) -> Run:
        """Apply `changes` if the run is still at `expected_version`; version + 1.

        Refusals (nothing written): 404 unknown run (or unknown
        `last_checkpoint_id`: every id in a body names an object of this
        tenant); 409 `content_deleted` for a fenced run; 409 `invalid_transition`
        for a terminal run or a status the state machine does not allow from
        the current one; 409 `version_conflict` (details.current_version) for a
        stale version; 409 `run_claimed` when another worker's claim is live
        (a runtime write, `as_runtime`, must name the claiming `worker`).
        `as_runtime=False` is a change by a person or the system (a decision,
        an expiry) that no claim holds back: only the version protects it.
        A run that ends here waits on no approval any more (`pending_approval_id`
        cleared); `RunActions.compare_and_set` also withdraws the approval.
        A run that moves to `waiting_approval`, `suspended` or an end is held
        by nobody (its claim dropped); one that succeeds without an `error`
        in `changes` carries none (a recovered run's old error goes).
        """
        values = self._clean_changes(changes)
        target = values.get("status")
        if target in TERMINAL_RUN_STATUSES:
            values["pending_approval_id"] = ""  # a finished run waits on nothing
        if values.get("last_checkpoint_id"):
            with self.reading():
                self._require_checkpoint(values["last_checkpoint_id"])
        now = self.now()
        conditions: list[tuple[str, list[Any]]] = [
            ('"version" = %s', [expected_version]),
            self._status_condition(allowed_from(target) if target else NON_TERMINAL_STATUSES),
            _NOT_FENCED,
        ]
        if as_runtime:
            conditions.append(self._claim_condition(worker, now))
        sets: dict[str, Any] = {**values, "updated_at": now}
        if target in UNCLAIMED_STATUSES:
            sets.update(_NO_CLAIM)
        if target == RunStatus.SUCCEEDED and "error" not in values:
            sets["error"] = None
        # One statement: it changes the run and records its transition, or
        # writes nothing and reads why (no second query, no savepoint).
        run, seen = self._update_explained(
            run_id=run_id,
            sets=sets,
            conditions=conditions,
            transition=Transition(values, worker, now),
        )
        if run is None:
            raise self._why_refused(
                run_id=run_id,
                expected_version=expected_version,
                target=target,
                worker=worker if as_runtime else None,
                claims=as_runtime,
                now=now,
                seen=seen,
                explained=True,
            )
        return run

    def claim(
        self,
        *,
        run_id: str,
        worker: str,
        expected_version: int,
        lease_seconds: int = DEFAULT_CLAIM_LEASE_SECONDS,
    ) -> Run:
        """Make `worker` the run's only writer until the lease ends; version + 1.

        Two workers claiming the same version: one wins, the other gets 409
        `version_conflict`. A live claim of another worker is 409 `run_claimed`.
        The same worker may renew its claim. A worker whose claim expired and
        was taken is superseded: its version is stale and the claim is not its.
        """
        if not isinstance(worker, str) or not worker or len(worker) > MAX_WORKER_LENGTH:
            raise Unprocessable(
                "A worker name is required.",
                details={"worker": [f"1-{MAX_WORKER_LENGTH} characters"]},
            )
        if (
            isinstance(lease_seconds, bool)
            or not isinstance(lease_seconds, int)
            or not 1 <= lease_seconds <= MAX_CLAIM_LEASE_SECONDS
        ):
            raise Unprocessable(
                "lease_seconds out of range.",
                details={"lease_seconds": [f"from 1 to {MAX_CLAIM_LEASE_SECONDS}"]},
            )
        now = self.now()
        claim_until = now + timedelta(seconds=lease_seconds)
        with self.atomic():
            run = self._update_returning(
                where={"run_id": run_id},
                sets={"claimed_by": worker, "claim_until": claim_until, "updated_at": now},
                conditions=[
                    ('"version" = %s', [expected_version]),
                    self._status_condition(NON_TERMINAL_STATUSES),
                    _NOT_FENCED,
                    self._claim_condition(worker, now),
                ],
                transition=Transition(
                    {"claimed_by": worker, "claim_until": claim_until}, worker, now
                ),
            )
            if run is None:
                raise self._why_refused(
                    run_id=run_id,
                    expected_version=expected_version,
                    target=None,
                    worker=worker,
                    claims=True,
                    now=now,
                )
        return run

    # --- people and the system --------------------------------------------
    def cancel(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """A person stops a run, whatever its claim (audited `run.cancelled`).

        With `expected_version` (the version the person saw) it is a
        compare-and-set: a run that moved since is 409 `version_conflict` and
        nothing changes. The runtime that created the run hears of it by
        webhook. `RunActions.cancel` also withdraws the run's pending approval.
        """
        return self._by_person(
            run_id=run_id,
            action="run.cancelled",
            to_status=RunStatus.CANCELLED,
            allowed=NON_TERMINAL_STATUSES,
            reason=reason,
            expected_version=expected_version,
        )

    def suspend(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """A person pauses a running (or waiting) run: `suspended`, audited `run.suspended`.

        The runtime learns it by webhook and at its next write (409, the run
        is suspended at a newer version): it stops at its next checkpoint.
        `RunActions.suspend` withdraws the approval a waiting run asked for.
        """
        return self._by_person(
            run_id=run_id,
            action="run.suspended",
            to_status=RunStatus.SUSPENDED,
            allowed=(RunStatus.RUNNING, RunStatus.WAITING_APPROVAL),
            reason=reason,
            expected_version=expected_version,
        )

    def resume(self, *, run_id: str, reason: str, expected_version: int | None = None) -> Run:
        """A person hands a suspended run back to its runtime: `running`, audited `run.resumed`.

        The resume contract (README "Run control"): the runtime that created
        the run gets a `run.resumed` webhook with the run; it claims the run
        at that version (`POST /runs/{id}/claim`) and continues from
        `last_checkpoint_id`, asking the effect ledger before repeating any
        effect. Until a worker claims it the inspector says nobody has.
        """
        return self._by_person(
            run_id=run_id,
            action="run.resumed",
            to_status=RunStatus.RUNNING,
            allowed=(RunStatus.SUSPENDED,),
            reason=reason,
            expected_version=expected_version,
        )

    def _by_person(
        self,
        *,
        run_id: str,
        action: str,
        to_status: str,
        allowed: Iterable[str],
        reason: str,
        expected_version: int | None,
    ) -> Run:
        """One compare-and-set by a person (or the system), audited, the runtime told."""
        check_reason(reason)
        now = self.now()
        allowed = tuple(allowed)
        # A person takes the run from whichever worker held it: cancelled or
        # suspended it is held by nobody, resumed it goes to the next claimant.
        sets: dict[str, Any] = {"status": to_status, "updated_at": now, **_NO_CLAIM}
        if to_status in TERMINAL_RUN_STATUSES or to_status == RunStatus.SUSPENDED:
            sets["pending_approval_id"] = ""  # a paused or ended run waits on nothing
        conditions = [self._status_condition(allowed)]
        if expected_version is not None:
            conditions.append(('"version" = %s', [expected_version]))
        with self.atomic():
            run = self._update_returning(
                where={"run_id": run_id},
                sets=sets,
                conditions=conditions,
                transition=Transition(
                    {"status": to_status, "reason": self._step_reason(reason)}, None, now
                ),
            )
            if run is None:
                raise self._why_person_refused(run_id, to_status, allowed, expected_version)
            self.audit(
                action,
                target_type="run",
                target_id=run.run_id,
                before={"status": run.previous_status, "version": run.version - 1},
                after={"status": run.status, "version": run.version},
                reason=reason,
            )
            self._notify(run, action)
        return run

    def _step_reason(self, reason: str) -> str:
        """The reason a control step keeps (the run's timeline says why): a person's or an
        operator token's own words. A runtime's is agent text, which the status history
        must not keep past a content deletion: the audit event's detached payload has it."""
        return "" if self.actor.writes_content else reason

    def _why_person_refused(
        self, run_id: str, to_status: str, allowed: tuple[str, ...], expected_version: int | None
    ) -> Exception:
        current = self._runs().filter(run_id=run_id).first()
        if current is None:
            return NotFound("No such run.", details={"run_id": run_id})
        if current.is_terminal:
            return self._terminal(current, to_status)
        if expected_version is not None and current.version != expected_version:
            return Conflict(
                "The run changed since you read it.",
                code="version_conflict",
                details={
                    "current_version": current.version,
                    "expected_version": expected_version,
                    "status": current.status,
                },
            )
        return Conflict(
            f"A run cannot go from {current.status} to {to_status} here.",
            code="invalid_transition",
            details={"from": current.status, "to": to_status, "current_version": current.version},
        )

    def _notify(self, run: Run, action: str) -> None:
        """Tell the runtime that created the run (if its token has a webhook), through the
        outbox: the job is written in this transaction and published after the commit."""
        if run.created_by_token_id is None:
            return
        has_webhook = (
            RuntimeToken.objects.filter(
                pk=run.created_by_token_id, tenant=self.tenant, revoked_at__isnull=True
            )
            .exclude(webhook_url="")
            .exists()
        )
        if has_webhook:
            enqueue(
                tenant=self.tenant,
                task=notify_run_control.name,
                args=[self.tenant.pk, run.run_id, run.version, action],
            )

    def fail_overdue(self, *, limit: int = 500) -> list[Run]:
        """Sweep: non-terminal runs past `deadline_at` -> `failed` (`deadline_exceeded`).

        Bounded to `limit` runs; returns the runs it failed. Rows another
        transaction holds are skipped (`skip_locked`, the next sweep gets them)
        and each update re-checks status and deadline, so two sweeps at once
        fail each run exactly once. Each is audited `run.deadline_exceeded`
        with the store's (system) actor. `RunActions.fail_overdue` also
        withdraws the failed runs' pending approvals.
        """
        now = self.now()
        failed: list[Run] = []
        with self.atomic():
            overdue = list(
                self._runs()
                .select_for_update(skip_locked=True)
                .filter(status__in=NON_TERMINAL_STATUSES, deadline_at__lt=now)
                .order_by("deadline_at", "id")[:limit]
            )
            for candidate in overdue:
                error = {
                    "code": "deadline_exceeded",
                    "message": "The run passed its deadline.",
                    "deadline_at": candidate.deadline_at.isoformat(),
                }
                run = self._update_returning(
                    where={"id": candidate.pk},
                    sets={
                        "status": RunStatus.FAILED,
                        "error": error,
                        "pending_approval_id": "",
                        "updated_at": now,
                        **_NO_CLAIM,
                    },
                    conditions=[
                        self._status_condition(NON_TERMINAL_STATUSES),
                        ('"deadline_at" < %s', [self._db_value("deadline_at", now)]),
                    ],
                    transition=Transition({"status": RunStatus.FAILED, "error": error}, None, now),
                )
                if run is None:
                    continue
                self.audit(
                    "run.deadline_exceeded",
                    target_type="run",
                    target_id=run.run_id,
                    before={"status": run.previous_status, "version": run.version - 1},
                    after={"status": run.status, "version": run.version, "error": error},
                )
                failed.append(run)
        return failed

    # --- events and node executions ---------------------------------------
    def append_events(
        self, *, run_id: str, events: list[dict[str, Any]], worker: str | None = None
    ) -> list[RunEvent]:
        """Append events with gap-free per-run `seq`s.

        One `UPDATE run SET last_event_seq = last_event_seq + n … RETURNING`
        reserves the numbers; its row lock orders concurrent appenders and a
        rolled-back append gives its numbers back. A finished run takes no
        more events (409 `run_terminal`); while another worker's claim is
        live, none from anyone else (409 `run_claimed`).
        """
        rows = self._clean_events(events)
        now = self.now()
        with self.atomic():
            for _attempt in range(2):
                run = self._update_returning(
                    where={"run_id": run_id},
                    sets={},
                    conditions=[
                        self._status_condition(NON_TERMINAL_STATUSES),
                        _NOT_FENCED,
                        self._claim_condition(worker, now),
                    ],
                    increments={"last_event_seq": len(rows)},
                    bump_version=False,
                )
                if run is not None:
                    break
                current = self.get(run_id)
                if current.content_fenced_at is not None:
                    raise ContentDeleted("run", run_id=run_id)
                if current.is_terminal:
                    raise Conflict(
                        "The run has finished; it takes no more events.",
                        code="run_terminal",
                        details={"status": current.status},
                    )
                refusal = self._claimed_elsewhere(current, worker, now)
                if refusal is not None:
                    raise refusal
                # The claim was dropped between the update and the read: try again.
            else:  # pragma: no cover - a claim taken and dropped again in between
                raise Conflict("The run changed while appending; retry.", code="append_contention")
            first = run.last_event_seq - len(rows) + 1
            created = RunEvent.objects.bulk_create(
                [
                    RunEvent(
                        tenant=self.tenant,
                        run=run,
                        seq=first + i,
                        type=row["type"],
                        node_id=row["node_id"],
                        payload=row["payload"],
                        created_at=now,
                    )
                    for i, row in enumerate(rows)
                ]
            )
        return created

    def start_node(self, *, run_id: str, node_id: str) -> NodeExecution:
        """A new attempt at `node_id` (1, 2, …); an attempt left `started` is failed as superseded."""
        limit = STRING_LIMITS["current_node_id"]
        if not isinstance(node_id, str) or not 1 <= len(node_id) <= limit:
            raise Unprocessable(
                "node_id is required.", details={"node_id": [f"1-{limit} characters"]}
            )
        now = self.now()
        with self.atomic():
            run = self._lock(run_id)
            if run.content_fenced_at is not None:
                raise ContentDeleted("run", run_id=run_id)
            if run.is_terminal:
                raise Conflict(
                    "The run has finished.", code="run_terminal", details={"status": run.status}
                )
            attempts = NodeExecution.objects.filter(tenant=self.tenant, run=run, node_id=node_id)
            attempts.filter(status=NodeStatus.STARTED).update(
                status=NodeStatus.FAILED,
                finished_at=now,
                error={"code": "superseded", "message": "A new attempt started."},
            )
            last = attempts.aggregate(last=Max("attempt"))["last"] or 0
            return NodeExecution.objects.create(
                tenant=self.tenant,
                run=run,
                node_id=node_id,
                attempt=last + 1,
                status=NodeStatus.STARTED,
                started_at=now,
            )

    def finish_node(
        self, *, run_id: str, node_id: str, status: str, error: dict | None = None
    ) -> NodeExecution:
        """Finish the node's latest attempt (409 `node_not_started` if it is not running)."""
        if status not in (NodeStatus.SUCCEEDED, NodeStatus.FAILED):
            raise Unprocessable(
                "A node finishes as succeeded or failed.",
                details={"status": ["must be succeeded or failed"]},
            )
        if error is not None and not isinstance(error, dict):
            raise Unprocessable("error must be an object.", details={"error": ["an object"]})
        with self.atomic():
            run = self._lock(run_id)
            if run.content_fenced_at is not None:
                raise ContentDeleted("run", run_id=run_id)
            execution = (
                NodeExecution.objects.select_for_update()
                .filter(tenant=self.tenant, run=run, node_id=node_id)
                .order_by("-attempt")
                .first()
            )
            if execution is None or execution.status != NodeStatus.STARTED:
                raise Conflict(
                    "That node has no running attempt.",
                    code="node_not_started",
                    details={"node_id": node_id},
                )
            execution.status = status
            execution.error = error
            execution.finished_at = self.now()
            execution.save(update_fields=["status", "error", "finished_at"])
        return execution

    # --- lifecycle: a session's runs, the fence, content --------------------
    CONTENT = CONTENT

    def session_runs(self, *, session_pk: int, attached_run_ids: Iterable[str] = ()) -> list[Run]:
        """Runs whose content belongs to a session: created in it or ever attached to it."""
        return list(
            self._runs()
            .filter(Q(session_id=session_pk) | Q(run_id__in=list(attached_run_ids)))
            .order_by("pk")
        )

    def tasks_of_held_sessions(self) -> set[int]:
        """Tasks a run of a session on legal hold works on: their content must stay."""
        return set(
            self._runs()
            .filter(session__legal_hold=True, task__isnull=False)
            .values_list("task_id", flat=True)
        )

    def fence_content(self, run_pks: Iterable[int]) -> int:
        """These runs take no more runtime writes (409 `content_deleted`). Idempotent."""
        return (
            self._runs()
            .filter(pk__in=list(run_pks), content_fenced_at__isnull=True)
            .update(content_fenced_at=self.now())
        )

    def _content_rows(self, name: str, runs: Iterable[int]) -> tuple[QuerySet, str]:
        """This tenant's rows of a class in these runs that still hold content, and their key."""
        content_class(CONTENT, name)
        runs = list(runs)
        if name == RUN_EVENT_PAYLOADS:
            rows = RunEvent.objects.filter(tenant=self.tenant, run__in=runs)
            return rows.filter(payload_deleted_at__isnull=True), "seq"
        if name == RUN_ERRORS:
            return self._runs().filter(pk__in=runs, error__isnull=False), "pk"
        if name == RUN_TRANSITION_ERRORS:
            rows = RunTransition.objects.filter(tenant=self.tenant, run__in=runs)
            return rows.filter(changes__has_key="error"), "version"
        rows = NodeExecution.objects.filter(tenant=self.tenant, run__in=runs)
        return rows.filter(error__isnull=False), "pk"

    def content_left(self, name: str, containers: Iterable[int]) -> int:
        return self._content_rows(name, containers)[0].count()

    def redact_content(
        self, name: str, container: int, *, after: Any, limit: int, now: datetime
    ) -> Batch:
        """Remove the content of up to `limit` rows of one run (in the caller's transaction)."""
        rows, key = self._content_rows(name, [container])
        if name == RUN_EVENT_PAYLOADS:

            def remove(qs: QuerySet) -> int:
                return qs.update(payload=None, payload_deleted_at=now)
        elif name == RUN_TRANSITION_ERRORS:

            def remove(qs: QuerySet) -> int:
                without_error = CombinedExpression(
                    F("changes"),
                    "-",
                    Value("error"),
                    output_field=RunTransition._meta.get_field("changes"),
                )
                return qs.update(changes=without_error)
        else:

            def remove(qs: QuerySet) -> int:
                return qs.update(error=None)

        return redact_in_key_order(rows, key, after=after, limit=limit, remove=remove)

    # --- internals --------------------------------------------------------
    def _require_checkpoint(self, checkpoint_id: str) -> None:
        """A checkpoint id in a body names a checkpoint of this tenant (404 otherwise)."""
        if not TaskCheckpoint.objects.filter(
            tenant=self.tenant, checkpoint_id=checkpoint_id
        ).exists():
            raise NotFound("No such checkpoint.", details={"last_checkpoint_id": checkpoint_id})

    def _lock(self, run_id: str) -> Run:
        run = self._runs().select_for_update().filter(run_id=run_id).first()
        if run is None:
            raise NotFound("No such run.", details={"run_id": run_id})
        return run

    def _clean_changes(self, changes: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(changes, dict):
            raise Unprocessable("changes must be an object.", details={"changes": ["an object"]})
        errors: dict[str, list[str]] = {}
        values: dict[str, Any] = {}
        for key, value in changes.items():
            if key not in RUN_CHANGE_FIELDS:
                errors[key] = ["not a field a run transition may change"]
            elif key == "status":
                if value not in RunStatus.values:
                    errors[key] = [f"must be one of {', '.join(RunStatus.values)}"]
                else:
                    values[key] = str(value)
            elif key in _COUNTERS:
                if isinstance(value, bool) or not isinstance(value, int):
                    errors[key] = ["must be an integer"]
                elif not 0 <= value <= MAX_COUNTER:
                    errors[key] = [f"must be from 0 to {MAX_COUNTER}"]
                else:
                    values[key] = value
            elif key == "cost_used":
                try:
                    values[key] = cost_value(value)
                except ValueError as exc:
                    errors[key] = [str(exc)]
            elif key == "error":
                if value is not None and not isinstance(value, dict):
                    errors[key] = ["must be an object or null"]
                else:
                    values[key] = value
            else:
                text = "" if value is None else value
                if not isinstance(text, str):
                    errors[key] = ["must be a string"]
                elif len(text) > STRING_LIMITS[key]:
                    errors[key] = [f"at most {STRING_LIMITS[key]} characters"]
                else:
                    values[key] = text
        if errors:
            raise Unprocessable("Some changes are invalid.", details=errors)
        return values

    def _clean_events(self, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        if not isinstance(events, list) or not events:
            raise Unprocessable(
                "events must be a non-empty list.", details={"events": ["at least one event"]}
            )
        if len(events) > MAX_EVENTS_PER_APPEND:
            raise Unprocessable(
                "Too many events.", details={"events": [f"at most {MAX_EVENTS_PER_APPEND}"]}
            )
        rows = []
        for i, event in enumerate(events):
            if not isinstance(event, dict):
                raise Unprocessable(
                    "Each event is an object.",
                    details={field_path("events", i): ["must be an object"]},
                )
            kind, node_id = event.get("type"), event.get("node_id") or ""
            if not isinstance(kind, str) or not 1 <= len(kind) <= MAX_EVENT_TYPE_LENGTH:
                raise Unprocessable(
                    "Invalid event type.",
                    details={
                        field_path("events", i, "type"): [f"1-{MAX_EVENT_TYPE_LENGTH} characters"]
                    },
                )
            limit = STRING_LIMITS["current_node_id"]
            if not isinstance(node_id, str) or len(node_id) > limit:
                raise Unprocessable(
                    "Invalid node_id.",
                    details={field_path("events", i, "node_id"): [f"at most {limit} characters"]},
                )
            rows.append({"type": kind, "node_id": node_id, "payload": event.get("payload")})
        return rows

    @staticmethod
    def _db_value(field_name: str, value: Any) -> Any:
        return db_value(Run._meta.get_field(field_name), value)

    @staticmethod
    def _status_condition(statuses: Iterable[str]) -> tuple[str, list[Any]]:
        """`status IN (…)`, the statuses written in (they are the state machine's own
        constants, not input): fewer parameters to render, the same statement."""
        return (_status_in(tuple(statuses)), [])

    def _claim_condition(self, worker: str | None, now: datetime) -> tuple[str, list[Any]]:
        """The claim is free, this worker's own, or expired (no worker: free or expired)."""
        return claim_condition(worker, self._db_value("claim_until", now))

    @staticmethod
    def _claimed_elsewhere(run: Run | Seen, worker: str | None, now: datetime) -> Conflict | None:
        """409 `run_claimed` if another worker's claim on `run` is live at `now`."""
        return claimed_elsewhere(
            claimed_by=run.claimed_by,
            claim_until=run.claim_until,
            worker=worker,
            now=now,
            version=run.version,
        )

    def _update_sql(
        self,
        *,
        where: dict[str, Any],
        sets: dict[str, Any],
        conditions: list[tuple[str, list[Any]]],
        increments: dict[str, int] | None,
        bump_version: bool,
        transition: Transition | None,
    ) -> tuple[str, list[Any]]:
        """The CTEs `r` (the conditional UPDATE … RETURNING) and `t` (its transition row).

        The text depends only on the names and conditions (`_update_text`,
        built once per shape); the values go as parameters, in its order.
        """
        increments = increments or {}
        sql = _update_text(
            tuple(sets),
            tuple(increments),
            tuple(where),
            tuple(condition for condition, _ in conditions),
            bump_version,
            transition is not None,
        )
        fields = _RUN_FIELDS
        params: list[Any] = [db_value(fields[name], value) for name, value in sets.items()]
        params += increments.values()
        params.append(self.tenant.pk)
        params += where.values()
        for _, values in conditions:
            params += values
        if transition is not None:
            params += [
                _encode_changes(transition.changes),
                self._transition_label(transition.worker),
                transition.now,
            ]
        return sql, params

    def _update_returning(
        self,
        *,
        where: dict[str, Any],
        sets: dict[str, Any],
        conditions: list[tuple[str, list[Any]]],
        increments: dict[str, int] | None = None,
        bump_version: bool = True,
        transition: Transition | None = None,
    ) -> Run | None:
        """One conditional `UPDATE … RETURNING` of this tenant's run; None if no row matched.

        PostgreSQL evaluates every right-hand side on the old row, so
        `previous_status = status` keeps the status it replaces. With a
        `transition`, the RunTransition row of the change is inserted from the
        UPDATE's RETURNING row in the same statement: one round trip for a
        compare-and-set.
        """
        ctes, params = self._update_sql(
            where=where,
            sets=sets,
            conditions=conditions,
            increments=increments,
            bump_version=bump_version,
            transition=transition,
        )
        with hot_cursor() as cursor:
            cursor.execute(f"WITH {ctes} SELECT {_RUN_COLUMNS}, {_PUBLIC_IDS} FROM r", params)
            row = cursor.fetchone()
        if row is None:
            return None
        return _run_from(row)

    def _update_explained(
        self,
        *,
        run_id: str,
        sets: dict[str, Any],
        conditions: list[tuple[str, list[Any]]],
        transition: Transition,
    ) -> tuple[Run | None, Seen | None]:
        """`_update_returning` of one run that also says why it matched nothing: one statement.

        When the UPDATE matched nothing, `runs_app_run_now` (migration 0007)
        reads what a refusal needs (version, status, fence, claim) as
        committed now, without a lock (a `FOR UPDATE` cost a third of the
        compare-and-set's speed), also after the UPDATE waited for another
        writer: the refusal is explained, races included, from the same
        statement. `(run, None)` when it changed; `(None, seen)` when it did
        not; `(None, None)` for no such run. Outside a transaction the whole
        of it is one round trip (`hot_cursor(alone=True)`).
        """
        ctes, params = self._update_sql(
            where={"run_id": run_id},
            sets=sets,
            conditions=conditions,
            increments=None,
            bump_version=True,
            transition=transition,
        )
        # OFFSET 0 keeps the subquery whole, so `r.id IS NULL` gates it (a one-time
        # filter): a compare-and-set that changed the run never calls the function.
        sql = (
            f"WITH {ctes} SELECT r.*, {_PUBLIC_IDS}, n.* FROM (VALUES (1)) one (x)"
            " LEFT JOIN r ON true LEFT JOIN LATERAL"
            f" (SELECT {_SEEN_COLUMNS} FROM runs_app_run_now(%s, %s) WHERE r.id IS NULL"
            " OFFSET 0) n ON true"
        )
        with hot_cursor(alone=True) as cursor:
            cursor.execute(sql, [*params, self.tenant.pk, run_id])
            row = cursor.fetchone()
        if row[0] is not None:
            return _run_from(row[:-_SEEN_WIDTH]), None
        seen = row[-_SEEN_WIDTH:]
        return (None, None) if seen[0] is None else (None, Seen(*seen))

    def _why_refused(
        self,
        *,
        run_id: str,
        expected_version: int,
        target: str | None,
        worker: str | None,
        now: datetime,
        seen: Seen | None = None,
        explained: bool = False,
        claims: bool = True,
    ) -> Exception:
        """The error for a conditional update that matched nothing.

        Versions only grow and every change of status or claim bumps the
        version, so a row still at `expected_version` is the row the update
        saw; with the same `now`, exactly one reason below applies. `explained`:
        `seen` is the row as committed when the refused statement read it
        (`_update_explained`, after any writer its UPDATE waited for; None: no
        such run), so no query is needed.
        """
        run: Run | Seen | None = seen if explained else self._runs().filter(run_id=run_id).first()
        if run is None:
            return NotFound("No such run.", details={"run_id": run_id})
        if run.content_fenced_at is not None:
            return ContentDeleted("run", run_id=run_id)
        if run.is_terminal:
            return self._terminal(run, target or run.status)
        if run.version != expected_version:
            return Conflict(
                "The run changed since you read it.",
                code="version_conflict",
                details={
                    "current_version": run.version,
                    "expected_version": expected_version,
                    "status": run.status,
                },
            )
        claimed = self._claimed_elsewhere(run, worker, now) if claims else None
        if claimed is not None:
            return claimed
        if target and run.status not in allowed_from(target):
            return Conflict(
                f"A run cannot go from {run.status} to {target}.",
                code="invalid_transition",
                details={"from": run.status, "to": target, "current_version": run.version},
            )
        return Conflict(  # not reachable by the reasoning above; never report success
            "The run changed since you read it.",
            code="version_conflict",
            details={"current_version": run.version, "expected_version": expected_version},
        )

    @staticmethod
    def _terminal(run: Run | Seen, target: str) -> Conflict:
        return Conflict(
            f"The run has finished ({run.status}); it cannot change.",
            code="invalid_transition",
            details={"from": run.status, "to": target, "current_version": run.version},
        )

    def _record_transition(
        self,
        run: Run,
        *,
        from_status: str,
        changes: dict[str, Any],
        worker: str | None,
        now: datetime,
    ) -> None:
        RunTransition.objects.create(
            tenant=self.tenant,
            run=run,
            version=run.version,
            from_status=from_status,
            to_status=run.status,
            changes=_jsonable(changes),
            actor_label=self._transition_label(worker),
            created_at=now,
        )

    def _transition_label(self, worker: str | None) -> str:
        label = self.actor.label if not worker else f"{self.actor.label} ({worker})"
        return label[:200]


__all__ = ["CONTENT", "RUN_CHANGE_FIELDS", "RunStateStore", "allowed_from"]
