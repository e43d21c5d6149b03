"""One run, pages of runs, their transitions, node executions and events."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Case, DateTimeField, F, Q, QuerySet, When
from django.db.models.expressions import Value
from django.db.models.functions import Greatest

from sessions_app.models import Session
from stateroom.errors import NotFound, Unprocessable
from stateroom.rows import from_row
from stateroom.sql import hot_cursor
from tasks_app.models import Task

from ..models import NodeExecution, NodeStatus, Run, RunEvent, RunStatus, RunTransition
from .base import RunStoreBase
from .sql import GET_RUN, RUN_WIDTH, SESSION_WIDTH


class RunReads(RunStoreBase):
    def _runs(self) -> QuerySet[Run]:
        return Run.objects.filter(tenant=self.tenant)

    def get(self, run_id: str) -> Run:
        """The run with its session and task (as `select_related` would): one prepared query."""
        with hot_cursor(alone=True) as cursor:
            cursor.execute(GET_RUN, [self.tenant.pk, run_id])
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such run.", details={"run_id": run_id})
        run = from_row(Run, row[:RUN_WIDTH])
        session_row = row[RUN_WIDTH : RUN_WIDTH + SESSION_WIDTH]
        task_row = row[RUN_WIDTH + SESSION_WIDTH :]
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
