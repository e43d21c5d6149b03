"""Tell a runtime that a person cancelled, suspended or resumed its run (signed webhook).

`RunStateStore` enqueues the task `notify_run_control` (`runs_app.tasks`) through
the outbox with the change, by its name `NOTIFY_RUN_CONTROL`, when the run was created by a runtime token that has a
`webhook_url`. Signing (Standard Webhooks), the egress check and retries are
`tenancy_app.webhooks`, as for approval decisions.

Body: `{"event": "run.cancelled" | "run.suspended" | "run.resumed",
"version": <the run's version after the change>, "run": {...as GET /api/v1/runs/{id}}}`.
`run` is the run as it is when the webhook is sent (it may have moved on;
`version` says which change this delivery is about). What the runtime does:
cancelled - stop, write nothing more (the run is terminal); suspended - stop
at the next safe point, the run waits for a person; resumed - claim the run
at `run.version` (`POST /api/v1/runs/{id}/claim`) and continue from
`run.last_checkpoint_id` (README "Run control").
"""

from __future__ import annotations

RUN_CONTROL_EVENTS = ("run.cancelled", "run.suspended", "run.resumed")
# The Celery task's registered name (it was defined in this module once; queued jobs keep it).
NOTIFY_RUN_CONTROL = "runs_app.webhooks.notify_run_control"


def run_control_payload(version: int, run: dict) -> dict:
    """The body of a run-control webhook besides its event: the version it is about, the run."""
    return {"version": version, "run": run}
