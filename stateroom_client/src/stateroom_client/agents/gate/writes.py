"""The gate's writes to its run, task and session: each a compare-and-set on the freshest
version, re-read on a conflict (not a blind retry)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, Literal

from agents import Agent, RunConfig

from ...aio import AsyncStateroomClient
from ...errors import StateroomError, VersionConflict
from ...models import Run
from ..session import StateroomSession
from .claim import _Claim

RiskPolicy = Callable[[str, dict[str, Any]], str]
Explain = Callable[[str, dict[str, Any]], str]


class GateWrites:
    """What every part of the gate holds, and its writes."""

    client: AsyncStateroomClient
    agent: Agent[Any]
    worker: str
    lease_seconds: int
    risk_policy: RiskPolicy
    explain: Explain
    run_config: RunConfig
    max_turns: int
    approval_ttl: timedelta | None
    on_rejection: Literal["continue", "stop"]
    allowed_decisions: tuple[str, ...]
    _claims: dict[str, _Claim]

    def _claim(self, run_id: str) -> _Claim:
        claim = self._claims.get(run_id)
        if claim is None:
            claim = self._claims[run_id] = _Claim(
                self.client, run_id, self.worker, self.lease_seconds
            )
        return claim

    async def _update(
        self, run_id: str, *, events: list[dict[str, Any]] | None = None, **changes: Any
    ) -> Run:
        """Compare-and-set on the freshest version; re-read on a conflict (not a blind retry).

        With `events`, they and the transition go as one request (`step_run`): a
        conflict writes neither, so the retry appends them once.
        """
        if changes.get("error", ...) is None:
            changes.pop("error")
        for _attempt in range(5):
            run = await self.client.get_run(run_id)
            try:
                if events:
                    return await self.client.step_run(
                        run_id,
                        expected_version=run.version,
                        worker=self.worker,
                        events=events,
                        **changes,
                    )
                return await self.client.transition_run(
                    run_id, expected_version=run.version, worker=self.worker, **changes
                )
            except VersionConflict:
                continue
        raise StateroomError(f"Run {run_id} kept changing; could not update it.")

    async def _finish_task(self, task_id: str, status: str) -> None:
        for _attempt in range(5):
            task = await self.client.get_task(task_id)
            if task.status == status:
                return
            try:
                await self.client.save_task_state(
                    task_id, expected_version=task.version, status=status
                )
                return
            except VersionConflict:
                continue

    async def _attach(self, session: StateroomSession, run_id: str) -> None:
        for _attempt in range(5):
            record = await self.client.get_session(session.session_id)
            if run_id in record.attached_run_ids:
                return
            try:
                await self.client.attach_session(
                    session.session_id,
                    run_id=run_id,
                    user_id=session.user_id,
                    expected_revision=record.revision,
                )
                return
            except VersionConflict:
                continue

    async def _detach(self, session: StateroomSession, run_id: str) -> None:
        for _attempt in range(5):
            record = await self.client.get_session(session.session_id)
            if run_id not in record.attached_run_ids or record.status in ("closed", "expired"):
                return
            try:
                await self.client.detach_session(
                    session.session_id,
                    run_id=run_id,
                    user_id=session.user_id,
                    expected_revision=record.revision,
                )
                return
            except VersionConflict:
                continue

    async def _event(self, run_id: str, type: str, payload: dict[str, Any]) -> None:
        await self.client.append_events(
            run_id, [{"type": type, "payload": payload}], worker=self.worker
        )
