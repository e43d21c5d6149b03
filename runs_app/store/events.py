"""Events with gap-free seqs, and node executions."""

from __future__ import annotations

from typing import Any

from django.db.models import Max

from stateroom.errors import Conflict, ContentDeleted, Unprocessable

from ..models import NodeExecution, NodeStatus, RunEvent
from .base import RunStoreBase
from .state import NON_TERMINAL_STATUSES, NOT_FENCED
from .validation import STRING_LIMITS, clean_events


class RunEvents(RunStoreBase):
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
        rows = clean_events(events)
        now = self.now()
        with self.atomic():
            for _attempt in range(2):
                run = self._update_returning(
                    where={"run_id": run_id},
                    sets={},
                    conditions=[
                        self._status_condition(NON_TERMINAL_STATUSES),
                        NOT_FENCED,
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
