"""A run's claim, as every runtime write to the run tests it.

A worker that claims a run (`RunStateStore.claim`) is its only runtime
writer until `claim_until`. The run store tests the claim in its own
statements; the stores that build on runs (effects, and approvals through
the run store's compare-and-set) test the same condition on the run row in
the statement or under the row lock of their write, so a claim taken at the
same time either comes first and refuses the write, or waits for it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from stateroom.errors import Conflict


def claim_condition(worker: str | None, now: Any, alias: str = "") -> tuple[str, list[Any]]:
    """SQL: the run's claim is free, `worker`'s own, or expired at `now` (a db value).

    A write without a worker passes only a free or expired claim. Effects and
    approvals, which build on runs, test the same condition on the run row.
    """
    prefix = f"{alias}." if alias else ""
    return (
        f'({prefix}"claimed_by" = \'\' OR {prefix}"claimed_by" = %s'
        f' OR {prefix}"claim_until" IS NULL OR {prefix}"claim_until" <= %s)',
        [worker or "", now],
    )


def claimed_elsewhere(
    *,
    claimed_by: str,
    claim_until: datetime | None,
    worker: str | None,
    now: datetime,
    version: int | None,
) -> Conflict | None:
    """409 `run_claimed` (details.claimed_by) if another worker's claim is live at `now`.

    `version`: the run's, in details.current_version (None: a session's append, which
    does not write the run, leaves it out).
    """
    if not claimed_by or claimed_by == worker or claim_until is None or claim_until <= now:
        return None
    details: dict[str, Any] = {"claimed_by": claimed_by, "claim_until": claim_until.isoformat()}
    if version is not None:
        details["current_version"] = version
    return Conflict("Another worker holds the run.", code="run_claimed", details=details)


class SessionRuns:
    """The `session_runs` port (stateroom.ports): what the session store reads of runs."""

    @property
    def table(self) -> str:
        from .models import Run

        return Run._meta.db_table

    def exists(self, tenant: Any, run_id: str) -> bool:
        from .models import Run

        return Run.objects.filter(tenant=tenant, run_id=run_id).exists()

    def session_pk(self, tenant: Any, run_id: str) -> Any:
        from .models import Run

        return (
            Run.objects.filter(tenant=tenant, run_id=run_id)
            .values_list("session_id", flat=True)
            .first()
        )

    def of_session(self, tenant: Any, run_id: str, session: Any) -> bool:
        from .models import Run

        return Run.objects.filter(tenant=tenant, run_id=run_id, session=session).exists()

    def claim_free_sql(self, worker: str | None, now: Any, alias: str) -> tuple[str, list[Any]]:
        return claim_condition(worker, now, alias)

    def refuse_claimed(
        self, tenant: Any, run_id: str, worker: str | None, now: datetime
    ) -> Conflict | None:
        from .models import Run

        run = (
            Run.objects.filter(tenant=tenant, run_id=run_id)
            .only("claimed_by", "claim_until")
            .first()
        )
        if run is None:
            return None
        return claimed_elsewhere(
            claimed_by=run.claimed_by,
            claim_until=run.claim_until,
            worker=worker,
            now=now,
            version=None,
        )


__all__ = ["SessionRuns", "claim_condition", "claimed_elsewhere"]
