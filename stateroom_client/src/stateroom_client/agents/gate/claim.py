"""One resumer at a time: the gate's claim on its run, and what it reports when it lost it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import socket
from datetime import datetime
from typing import Any

from ...aio import AsyncStateroomClient
from ...errors import StateroomError, VersionConflict
from ...models import Run
from .outcome import CLAIMED, GateOutcome


def default_worker() -> str:
    """A name no other process uses: host, process id and a random part."""
    return f"{socket.gethostname()[:100]}:{os.getpid()}:{secrets.token_hex(4)}"


class _Claim:
    """The gate's claim on its run: taken before work, renewed while it works, given up when
    the run waits for a person."""

    def __init__(
        self, client: AsyncStateroomClient, run_id: str, worker: str, lease_seconds: int
    ) -> None:
        self.client = client
        self.run_id = run_id
        self.worker = worker
        self.lease_seconds = lease_seconds
        self._renewer: asyncio.Task[None] | None = None

    async def hold(self, *, events: list[dict[str, Any]] | None = None, **changes: Any) -> Run:
        """Claim the run, or renew our claim; `RunClaimed` if another worker holds it.

        With `events` or transition `changes`, the claim, the events and the
        transition go as one request (`step_run`): all of them or nothing.
        """
        for _attempt in range(10):
            run = await self.client.get_run(self.run_id)
            try:
                if events or changes:
                    run = await self.client.step_run(
                        self.run_id,
                        expected_version=run.version,
                        worker=self.worker,
                        claim=True,
                        lease_seconds=self.lease_seconds,
                        events=events,
                        **changes,
                    )
                else:
                    run = await self.client.claim_run(
                        self.run_id,
                        worker=self.worker,
                        expected_version=run.version,
                        lease_seconds=self.lease_seconds,
                    )
            except VersionConflict:
                continue  # the run moved (a decision, our own write): re-read, claim again
            if self._renewer is None or self._renewer.done():
                self._renewer = asyncio.create_task(self._renew())
            return run
        raise StateroomError(f"Run {self.run_id} kept changing; could not claim it.")

    async def _renew(self) -> None:
        """Renew before the lease runs out, while the claim is ours; stop when it is not."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                run = await self.client.get_run(self.run_id)
                if run.claimed_by != self.worker:
                    return  # the run waits for a person or has ended (or is lost): not ours
                await self.hold()
            except StateroomError:
                return  # lost or gone: the next write says so and the gate stops

    async def let_go_if_waiting(self) -> None:
        """A run left waiting on a person with our claim on it: drop the claim (a transition
        to `waiting_approval` drops it), so whoever continues it after the decision can."""
        await self.stop()
        with contextlib.suppress(StateroomError):
            run = await self.client.get_run(self.run_id)
            if run.status == "waiting_approval" and run.claimed_by == self.worker:
                await self.client.transition_run(
                    self.run_id,
                    expected_version=run.version,
                    status="waiting_approval",
                    worker=self.worker,
                )

    async def stop(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._renewer
            self._renewer = None


async def _lost(client: AsyncStateroomClient, outcome: GateOutcome) -> GateOutcome:
    """The run ended while this gate was about to claim it. Cancelled by a person: say so.
    Ended by another worker: this one lost the race and did nothing, so it reports
    `claimed` (never the other worker's `succeeded`)."""
    run = await client.get_run(outcome.run_id)
    if run.status == "cancelled":
        outcome.status, outcome.error = run.status, run.error
    else:
        outcome.status, outcome.claimed_by = CLAIMED, run.claimed_by or None
    return outcome


def _when(value: str | None) -> datetime | None:
    """A claim's `claim_until` as the API sends it (ISO 8601), as a datetime."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
