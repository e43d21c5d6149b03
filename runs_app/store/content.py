"""The content a run keeps (event payloads, errors), its fence and its removal."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db.models import F, Q, QuerySet
from django.db.models.expressions import CombinedExpression, Value

from stateroom.content import RUN, Batch, ContentClass, content_class, redact_in_key_order

from .. import rollup
from ..models import NodeExecution, Run, RunEvent, RunTransition
from .base import RunStoreBase

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


class RunContent(RunStoreBase):
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
            if name == RUN_ERRORS:
                # The failure reason the dashboard's rollup counted goes with the error.
                rollup.reopen(self.tenant.pk, [container])

            def remove(qs: QuerySet) -> int:
                return qs.update(error=None)

        return redact_in_key_order(rows, key, after=after, limit=limit, remove=remove)
