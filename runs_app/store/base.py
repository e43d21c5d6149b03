"""What every part of RunStateStore shares: the row lock, the conditional update, why it was refused."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from stateroom.errors import Conflict, ContentDeleted, NotFound
from stateroom.sql import db_value, hot_cursor
from stateroom.store import BaseStore
from tasks_app.models import TaskCheckpoint

from ..claims import claim_condition, claimed_elsewhere
from ..models import Run, RunTransition
from .sql import (
    PUBLIC_IDS,
    RUN_COLUMNS,
    RUN_FIELDS,
    SEEN_COLUMNS,
    SEEN_WIDTH,
    Seen,
    Transition,
    encode_changes,
    jsonable,
    run_from,
    status_in,
    update_text,
)
from .state import allowed_from


class RunStoreBase(BaseStore):
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

    @staticmethod
    def _db_value(field_name: str, value: Any) -> Any:
        return db_value(Run._meta.get_field(field_name), value)

    @staticmethod
    def _status_condition(statuses: Iterable[str]) -> tuple[str, list[Any]]:
        """`status IN (…)`, the statuses written in (they are the state machine's own
        constants, not input): fewer parameters to render, the same statement."""
        return (status_in(tuple(statuses)), [])

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

        The text depends only on the names and conditions (`update_text`,
        built once per shape); the values go as parameters, in its order.
        """
        increments = increments or {}
        sql = update_text(
            tuple(sets),
            tuple(increments),
            tuple(where),
            tuple(condition for condition, _ in conditions),
            bump_version,
            transition is not None,
        )
        fields = RUN_FIELDS
        params: list[Any] = [db_value(fields[name], value) for name, value in sets.items()]
        params += increments.values()
        params.append(self.tenant.pk)
        params += where.values()
        for _, values in conditions:
            params += values
        if transition is not None:
            params += [
                encode_changes(transition.changes),
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
            cursor.execute(f"WITH {ctes} SELECT {RUN_COLUMNS}, {PUBLIC_IDS} FROM r", params)
            row = cursor.fetchone()
        if row is None:
            return None
        return run_from(row)

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
            f"WITH {ctes} SELECT r.*, {PUBLIC_IDS}, n.* FROM (VALUES (1)) one (x)"
            " LEFT JOIN r ON true LEFT JOIN LATERAL"
            f" (SELECT {SEEN_COLUMNS} FROM runs_app_run_now(%s, %s) WHERE r.id IS NULL"
            " OFFSET 0) n ON true"
        )
        with hot_cursor(alone=True) as cursor:
            cursor.execute(sql, [*params, self.tenant.pk, run_id])
            row = cursor.fetchone()
        if row[0] is not None:
            return run_from(row[:-SEEN_WIDTH]), None
        seen = row[-SEEN_WIDTH:]
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
            changes=jsonable(changes),
            actor_label=self._transition_label(worker),
            created_at=now,
        )

    def _transition_label(self, worker: str | None) -> str:
        label = self.actor.label if not worker else f"{self.actor.label} ({worker})"
        return label[:200]
