"""The synchronous Stateroom client.

Generated from `aio.py` by `stateroom_client/scripts/generate_sync_client.py`: edit `aio.py`,
not this file.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

import httpx

from . import models as m
from ._core import (
    LARGE_BODY,
    MAX_BODY,
    RETRY_EXCEPTIONS,
    RETRY_STATUSES,
    UNSET,
    Call,
    Endpoints,
    RetryPolicy,
    api_root,
    assert_decision,
    body_headers,
    body_limit_after,
    clean_params,
    encode_body,
    large_after,
    next_page,
    parse_response,
    retry_after,
    url,
)
from ._http import HttpClients, send
from ._tracing import traced
from .errors import TransportError

T = TypeVar("T")
E = Endpoints


class StateroomClient:
    """Typed client of the Stateroom runtime API (`/api/v1`).

    `base_url` is the server (``http://host:8000``) or its API root; `token` a
    runtime token (or an operator token, for `decide_approval`). Use it as a
    context manager, or call `close()`. `transport` is handed to httpx (tests,
    proxies, mounting a WSGI app). `max_body_bytes` is the server's request
    body limit (STATEROOM_MAX_BODY_BYTES, 1 MiB by default): writers that split
    their data (`StateroomSession.add_items`) keep each request under it; a 413
    replaces it with the limit the server states.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        retries: int = 3,
        backoff: float = 0.25,
        headers: dict[str, str] | None = None,
        max_body_bytes: int = MAX_BODY,
    ) -> None:
        self.root = api_root(base_url)
        self.timeout = timeout
        self.retry = RetryPolicy(retries=retries, backoff=backoff)
        self._large = LARGE_BODY
        self.max_body_bytes = max_body_bytes
        self._http = HttpClients(
            lambda: httpx.Client(
                transport=transport,
                timeout=timeout,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/json",
                    "User-Agent": "stateroom-client",
                    **(headers or {}),
                },
            )
        )

    def __enter__(self) -> StateroomClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- transport ----------------------------------------------------------
    def _call(self, call: Call[T]) -> T:
        # One span per call, its retries included; the headers carry its trace context.
        with traced(call.method, url(call, self.root)) as trace_headers:
            return self._send(call, trace_headers)

    def _send(self, call: Call[T], trace_headers: dict[str, str]) -> T:
        content = encode_body(call.body)
        attempt = 0
        resent = False
        while True:
            try:
                client = self._http.get()
                request = client.build_request(
                    call.method,
                    url(call, self.root),
                    params=clean_params(call.params),
                    content=content,
                    headers={**body_headers(content, self._large), **trace_headers},
                    timeout=call.timeout or self.timeout,
                )
                response = send(client, request)
            except httpx.WriteError as exc:
                # The request was not delivered whole, so the server cannot have
                # acted on it: send it once more, on a fresh connection, whatever
                # the call (the broken connection has left the pool).
                if not resent:
                    resent = True
                    continue
                raise TransportError(str(exc) or "write failed", code="connection_error") from exc
            except RETRY_EXCEPTIONS as exc:
                if call.retry and attempt < self.retry.retries:
                    time.sleep(self.retry.delay(attempt))
                    attempt += 1
                    continue
                raise TransportError(
                    str(exc) or type(exc).__name__, code="connection_error"
                ) from exc
            except httpx.TimeoutException as exc:
                raise TransportError(str(exc) or "timed out", code="timeout") from exc
            except httpx.HTTPError as exc:
                raise TransportError(str(exc), code="transport_error") from exc
            if (
                response.status_code in RETRY_STATUSES
                and call.retry
                and attempt < self.retry.retries
            ):
                time.sleep(self.retry.delay(attempt, retry_after(response)))
                attempt += 1
                continue
            self._large = large_after(response, self._large)
            self.max_body_bytes = body_limit_after(response, self.max_body_bytes)
            return parse_response(call, response)

    def _pages(self, call: Call[m.Page[T]]) -> Iterator[T]:
        current: Call[m.Page[T]] | None = call
        while current is not None:
            page = self._call(current)
            yield from page.results
            current = next_page(current, page)

    # --- who am I -----------------------------------------------------------
    def me(self) -> m.Me:
        return self._call(E.me())

    # --- sessions -----------------------------------------------------------
    def create_session(
        self,
        *,
        user_id: str,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        lease_seconds: int | None = None,
    ) -> m.Session:
        return self._call(
            E.create_session(
                user_id=user_id,
                session_id=session_id,
                metadata=metadata,
                lease_seconds=lease_seconds,
            )
        )

    def get_session(self, session_id: str) -> m.Session:
        return self._call(E.get_session(session_id))

    def list_sessions(
        self, *, status: str | None = None, user_id: str | None = None, limit: int | None = None
    ) -> m.Page[m.Session]:
        return self._call(E.list_sessions(status=status, user_id=user_id, limit=limit))

    def iter_sessions(
        self, *, status: str | None = None, user_id: str | None = None, page_size: int = 100
    ) -> Iterator[m.Session]:
        return self._pages(E.list_sessions(status=status, user_id=user_id, limit=page_size))

    def attach_session(
        self, session_id: str, *, run_id: str, user_id: str, expected_revision: int
    ) -> m.Session:
        return self._call(
            E.attach_session(
                session_id, run_id=run_id, user_id=user_id, expected_revision=expected_revision
            )
        )

    def detach_session(
        self, session_id: str, *, run_id: str, user_id: str, expected_revision: int
    ) -> m.Session:
        return self._call(
            E.detach_session(
                session_id, run_id=run_id, user_id=user_id, expected_revision=expected_revision
            )
        )

    def heartbeat_session(self, session_id: str, *, lease_seconds: int | None = None) -> m.Session:
        return self._call(E.heartbeat_session(session_id, lease_seconds=lease_seconds))

    def close_session(self, session_id: str, *, reason: str | None = None) -> m.Session:
        return self._call(E.close_session(session_id, reason=reason))

    def get_items(
        self,
        session_id: str,
        *,
        after_seq: int | None = None,
        before_seq: int | None = None,
        limit: int | None = None,
    ) -> m.Page[m.SessionItem]:
        return self._call(
            E.get_items(session_id, after_seq=after_seq, before_seq=before_seq, limit=limit)
        )

    def iter_items(
        self, session_id: str, *, after_seq: int | None = None, page_size: int = 500
    ) -> Iterator[m.SessionItem]:
        """Every item after `after_seq`, in seq order, page by page."""
        return self._pages(
            E.get_items(session_id, after_seq=after_seq, before_seq=None, limit=page_size)
        )

    def append_items(
        self,
        session_id: str,
        items: list[dict[str, Any]],
        *,
        run_id: str | None = None,
        idempotency_key: str | None = None,
        worker: str | None = None,
    ) -> m.AppendResult:
        """`worker`: with `run_id`, the worker writing for the run (needed while it holds a
        live claim on the run; another worker's items are 409 `run_claimed`)."""
        return self._call(
            E.append_items(
                session_id,
                items=items,
                run_id=run_id,
                idempotency_key=idempotency_key,
                worker=worker,
            )
        )

    # --- runs ---------------------------------------------------------------
    def create_run(
        self,
        *,
        run_id: str | None = None,
        session_id: str | None = None,
        task_id: str | None = None,
        active_agent: str | None = None,
        deadline_at: datetime | str | None = None,
    ) -> m.Run:
        return self._call(
            E.create_run(
                run_id=run_id,
                session_id=session_id,
                task_id=task_id,
                active_agent=active_agent,
                deadline_at=deadline_at,
            )
        )

    def get_run(self, run_id: str) -> m.Run:
        return self._call(E.get_run(run_id))

    def list_runs(
        self,
        *,
        status: str | None = None,
        session_id: str | None = None,
        limit: int | None = None,
        unclaimed: bool = False,
    ) -> m.Page[m.Run]:
        """`unclaimed=True`: only running runs no worker has held for longer than the
        tenant's setting (their `unclaimed_since` is set)."""
        return self._call(
            E.list_runs(status=status, session_id=session_id, limit=limit, unclaimed=unclaimed)
        )

    def iter_runs(
        self,
        *,
        status: str | None = None,
        session_id: str | None = None,
        page_size: int = 100,
        unclaimed: bool = False,
    ) -> Iterator[m.Run]:
        return self._pages(
            E.list_runs(status=status, session_id=session_id, limit=page_size, unclaimed=unclaimed)
        )

    def transition_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        status: str | None = None,
        turn_index: int | None = None,
        current_node_id: str | None = None,
        active_agent: str | None = None,
        token_used: int | None = None,
        cost_used: Decimal | str | None = None,
        model: str | None = None,
        last_checkpoint_id: str | None = None,
        error: Any = UNSET,
        worker: str | None = None,
    ) -> m.Run:
        """Compare-and-set: raises `VersionConflict` (with `.current_version`) if stale.

        `token_used` and `cost_used` are the run's totals so far, not increments: a
        report repeated (a retry after a lost answer, a step replayed) counts once.
        `model`: the model the run uses.

        `worker`: the name this worker claimed the run with (`claim_run`); while
        another worker's claim is live the write raises `RunClaimed`.
        """
        return self._call(
            E.transition_run(
                run_id,
                expected_version=expected_version,
                status=status,
                turn_index=turn_index,
                current_node_id=current_node_id,
                active_agent=active_agent,
                token_used=token_used,
                cost_used=cost_used,
                model=model,
                last_checkpoint_id=last_checkpoint_id,
                error=error,
                worker=worker,
            )
        )

    def claim_run(
        self,
        run_id: str,
        *,
        worker: str,
        expected_version: int,
        lease_seconds: int | None = None,
    ) -> m.Run:
        """Become the run's only runtime writer for `lease_seconds` (server default 60).

        Claiming again as the same worker renews the claim. Another worker's
        live claim raises `RunClaimed` (`.claimed_by`); a stale version
        `VersionConflict`. Pass `worker=` on every write to the run while
        the claim is live. A run that goes to `waiting_approval`, `suspended`
        or an end is held by nobody: claim it again to continue it.
        """
        return self._call(
            E.claim_run(
                run_id,
                worker=worker,
                expected_version=expected_version,
                lease_seconds=lease_seconds,
            )
        )

    def step_run(
        self,
        run_id: str,
        *,
        expected_version: int,
        worker: str | None = None,
        claim: bool = False,
        lease_seconds: int | None = None,
        events: list[dict[str, Any]] | None = None,
        **changes: Any,
    ) -> m.Run:
        """`claim_run`, `append_events` and `transition_run` as one request and one transaction.

        In that order: the claim at `expected_version` (with `claim=True`; it
        needs `worker`), the events, then the transition (its fields as
        `transition_run` takes them, when any is given) at the version the claim
        left. Each part keeps its own rules; a refusal of any part (raised as
        that call raises it) writes nothing at all. Not retried (a
        compare-and-set). Returns the run after the step.
        """
        return self._call(
            E.step_run(
                run_id,
                expected_version=expected_version,
                worker=worker,
                claim=claim,
                lease_seconds=lease_seconds,
                events=events,
                changes=changes or None,
            )
        )

    def cancel_run(self, run_id: str, *, reason: str, expected_version: int | None = None) -> m.Run:
        """End the run as `cancelled` (an approval it waits on is withdrawn), audited with
        `reason`. An operator or admin token, or the runtime token that created the run.
        `expected_version`: a run that moved since raises `VersionConflict`; a finished
        one `InvalidTransition`."""
        return self._call(
            E.control_run(run_id, "cancel", reason=reason, expected_version=expected_version)
        )

    def suspend_run(
        self, run_id: str, *, reason: str, expected_version: int | None = None
    ) -> m.Run:
        """Pause a running or waiting run (`suspended`), audited with `reason`; operator or
        admin tokens. Its runtime is told by webhook and stops at its next checkpoint."""
        return self._call(
            E.control_run(run_id, "suspend", reason=reason, expected_version=expected_version)
        )

    def resume_run(self, run_id: str, *, reason: str, expected_version: int | None = None) -> m.Run:
        """Hand a suspended run back to its runtime (`running`, held by nobody until a
        worker claims it), audited with `reason`; operator or admin tokens."""
        return self._call(
            E.control_run(run_id, "resume", reason=reason, expected_version=expected_version)
        )

    def append_events(
        self, run_id: str, events: list[dict[str, Any]], *, worker: str | None = None
    ) -> m.AppendResult:
        return self._call(E.append_events(run_id, events=events, worker=worker))

    def get_events(
        self, run_id: str, *, after: int | None = None, limit: int | None = None
    ) -> m.Page[m.RunEvent]:
        return self._call(E.get_events(run_id, after=after, limit=limit))

    def iter_events(
        self, run_id: str, *, after: int | None = None, page_size: int = 500
    ) -> Iterator[m.RunEvent]:
        return self._pages(E.get_events(run_id, after=after, limit=page_size))

    # --- approvals ----------------------------------------------------------
    def request_approval(
        self,
        run_id: str,
        *,
        expected_version: int,
        tool_name: str,
        arguments: dict[str, Any],
        risk: str,
        reason: str | None = None,
        expires_at: datetime | str | None = None,
        approval_id: str | None = None,
        allowed_decisions: list[str] | None = None,
        summary: str | None = None,
        key_arguments: list[str] | None = None,
        usual_arguments: dict[str, Any] | None = None,
        display: dict[str, Any] | None = None,
        replaces_approval_id: str | None = None,
        worker: str | None = None,
        arguments_schema: dict[str, Any] | None = None,
    ) -> m.Approval:
        """Ask a person; the run moves to `waiting_approval` (one pending approval at a time).

        `allowed_decisions` (approve, edit, reject, respond; default approve and
        reject) is what this runtime can honour: the console offers only those.
        `summary` (one line), `key_arguments` (up to 3 names) and
        `usual_arguments` (the tool's usual call) help the person see the risk;
        `display` says which arguments are money, e.g. `{"amounts": [{"argument":
        "amount_cents", "currency": "EUR", "minor_units": 2}]}` shows 230000 as EUR 2,300.00.
        `replaces_approval_id` names the voided approval of this run that this
        one asks again (`void_approval`): the console links the two.
        `arguments_schema` is the tool's JSON Schema for its arguments: the
        server refuses an edit that does not fit it, and a plain approve of
        `arguments` that do not (they can only be edited to fit, or rejected).
        """
        return self._call(
            E.request_approval(
                run_id,
                expected_version=expected_version,
                tool_name=tool_name,
                arguments=arguments,
                risk=risk,
                reason=reason,
                expires_at=expires_at,
                approval_id=approval_id,
                allowed_decisions=allowed_decisions,
                summary=summary,
                key_arguments=key_arguments,
                usual_arguments=usual_arguments,
                display=display,
                replaces_approval_id=replaces_approval_id,
                worker=worker,
                arguments_schema=arguments_schema,
            )
        )

    def get_approval(self, approval_id: str, *, wait: float | None = None) -> m.Approval:
        """With `wait` (seconds, at most 30) the server answers once it is decided, or at the end."""
        return self._call(E.get_approval(approval_id, wait=wait, timeout=self.timeout))

    def wait_for_decision(
        self, approval_id: str, *, timeout: float | None = None, poll: float = 30
    ) -> m.Approval:
        """Long-poll until the approval is no longer pending (decided, cancelled, or expired:
        the server answers at its `expires_at`), or `timeout` seconds pass."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = poll if deadline is None else min(poll, deadline - time.monotonic())
            approval = self.get_approval(approval_id, wait=max(1, int(wait)))
            if not approval.is_pending or (deadline is not None and time.monotonic() >= deadline):
                return approval

    def list_approvals(
        self, *, status: str | None = None, run_id: str | None = None, limit: int | None = None
    ) -> m.Page[m.Approval]:
        return self._call(E.list_approvals(status=status, run_id=run_id, limit=limit))

    def iter_approvals(
        self, *, status: str | None = None, run_id: str | None = None, page_size: int = 100
    ) -> Iterator[m.Approval]:
        return self._pages(E.list_approvals(status=status, run_id=run_id, limit=page_size))

    def cancel_approval(
        self, approval_id: str, *, reason: str | None = None, worker: str | None = None
    ) -> m.Approval:
        """Withdraw a pending approval this runtime asked for; its run goes back to running.
        `worker`: while this worker holds a claim on the run (another worker's live claim
        raises `RunClaimed`)."""
        return self._call(E.cancel_approval(approval_id, reason=reason, worker=worker))

    def void_approval(
        self,
        approval_id: str,
        *,
        reason_code: str,
        reason: str,
        details: dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> m.Approval:
        """Void an approval this runtime asked for and can no longer honour (`reason_code`
        `tool_changed`: the tool's schema changed since it was asked; `details`, e.g. the
        schema diff, at most 64 KiB of JSON). Allowed while it is pending, or approved but no
        effect is recorded under it; it ends `voided` and a pending one's run goes back to
        `running`. Refusals: `Forbidden` (`not_requester`), `AlreadyDecided` (rejected,
        expired, cancelled or voided), `Conflict` `effect_recorded` (its call ran or may have),
        `RunClaimed` (another worker's claim on the run is live; pass this worker's `worker`).
        """
        return self._call(
            E.void_approval(
                approval_id, reason_code=reason_code, reason=reason, details=details, worker=worker
            )
        )

    def report_approval_outcome(
        self,
        approval_id: str,
        *,
        outcome: str,
        error: dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> m.Approval:
        """Report how an approved call went when it ran: `outcome` `succeeded`, or `failed`
        with the tool's `error` (`{"message": ..., "type": ...}`), which the console's
        approval page shows. Once per approval (the same report again is a no-op).
        Refusals: `Forbidden` (`not_requester`), `Conflict` `not_approved` /
        `outcome_reported`, `RunClaimed` (pass this worker's `worker`)."""
        return self._call(
            E.report_approval_outcome(approval_id, outcome=outcome, error=error, worker=worker)
        )

    def decide_approval(
        self,
        approval_id: str,
        *,
        decision: str,
        reason: str = "",
        approved_arguments: dict[str, Any] | None = None,
        response: str | None = None,
    ) -> m.Approval:
        """Decide (needs an operator token): approve, edit (with `approved_arguments`),
        reject, or respond (with `response`). A second decision is `AlreadyDecided`."""
        assert_decision(decision)
        return self._call(
            E.decide_approval(
                approval_id,
                decision=decision,
                reason=reason,
                approved_arguments=approved_arguments,
                response=response,
            )
        )

    # --- effects ------------------------------------------------------------
    def record_effect(
        self,
        run_id: str,
        *,
        idempotency_key: str,
        tool_name: str,
        request: dict[str, Any],
        node_id: str | None = None,
        approval_id: str | None = None,
        worker: str | None = None,
    ) -> m.Effect:
        """Record (or find) the effect under `idempotency_key`; `.created` tells which."""
        return self._call(
            E.record_effect(
                run_id,
                idempotency_key=idempotency_key,
                tool_name=tool_name,
                request=request,
                node_id=node_id,
                approval_id=approval_id,
                worker=worker,
            )
        )

    def commit_effect(self, effect_id: str, *, result: Any, worker: str | None = None) -> m.Effect:
        return self._call(E.commit_effect(effect_id, result=result, worker=worker))

    def fail_effect(
        self, effect_id: str, *, error: dict[str, Any], worker: str | None = None
    ) -> m.Effect:
        return self._call(E.fail_effect(effect_id, error=error, worker=worker))

    def find_effect(self, idempotency_key: str) -> m.Effect | None:
        return self._call(E.find_effect(idempotency_key))

    def list_effects(
        self, *, idempotency_key: str | None = None, limit: int | None = None
    ) -> m.Page[m.Effect]:
        return self._call(E.list_effects(idempotency_key=idempotency_key, limit=limit))

    def list_run_effects(self, run_id: str, *, limit: int | None = None) -> m.Page[m.Effect]:
        return self._call(E.list_run_effects(run_id, limit=limit))

    def iter_run_effects(self, run_id: str, *, page_size: int = 100) -> Iterator[m.Effect]:
        return self._pages(E.list_run_effects(run_id, limit=page_size))

    # --- tasks --------------------------------------------------------------
    def create_task(
        self,
        *,
        objective: str,
        task_id: str | None = None,
        constraints: list[str] | None = None,
    ) -> m.Task:
        return self._call(
            E.create_task(objective=objective, task_id=task_id, constraints=constraints)
        )

    def get_task(self, task_id: str) -> m.Task:
        return self._call(E.get_task(task_id))

    def save_task_state(
        self,
        task_id: str,
        *,
        expected_version: int,
        plan_version: str | None = None,
        completed_nodes: list[str] | None = None,
        pending_nodes: list[str] | None = None,
        pending_approvals: list[str] | None = None,
        artifact_refs: list[str] | None = None,
        external_effect_records: list[str] | None = None,
        status: str | None = None,
    ) -> m.Task:
        """Compare-and-set on `version`: raises `VersionConflict` if stale."""
        return self._call(
            E.save_task_state(
                task_id,
                expected_version=expected_version,
                plan_version=plan_version,
                completed_nodes=completed_nodes,
                pending_nodes=pending_nodes,
                pending_approvals=pending_approvals,
                artifact_refs=artifact_refs,
                external_effect_records=external_effect_records,
                status=status,
            )
        )

    def append_checkpoint(
        self, task_id: str, *, state: Any, schema_version: int = 1, node_id: str | None = None
    ) -> m.CheckpointRef:
        return self._call(
            E.append_checkpoint(
                task_id, schema_version=schema_version, state=state, node_id=node_id
            )
        )

    def latest_checkpoint(self, task_id: str) -> m.Checkpoint:
        return self._call(E.latest_checkpoint(task_id))

    def get_checkpoint(self, task_id: str, checkpoint_id: str) -> m.Checkpoint:
        return self._call(E.get_checkpoint(task_id, checkpoint_id))

    # --- LangGraph threads ----------------------------------------------------
    # What `stateroom_client.langgraph.StateroomSaver` calls; a thread is a task
    # whose task_id is the thread id. Bodies and results are the API's JSON.
    def put_graph_checkpoint(self, thread_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return self._call(E.put_graph_checkpoint(thread_id, body=body))

    def list_graph_checkpoints(
        self,
        thread_id: str | None,
        *,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        metadata: str | None = None,
        limit: int | None = None,
    ) -> m.Page[dict[str, Any]]:
        """A page of checkpoints, newest first; `metadata` is a JSON object as text."""
        return self._call(
            E.list_graph_checkpoints(
                thread_id,
                checkpoint_ns=checkpoint_ns,
                checkpoint_id=checkpoint_id,
                before=before,
                metadata=metadata,
                limit=limit,
            )
        )

    def iter_graph_checkpoints(
        self,
        thread_id: str | None,
        *,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        metadata: str | None = None,
        page_size: int = 100,
    ) -> Iterator[dict[str, Any]]:
        return self._pages(
            E.list_graph_checkpoints(
                thread_id,
                checkpoint_ns=checkpoint_ns,
                checkpoint_id=checkpoint_id,
                before=before,
                metadata=metadata,
                limit=page_size,
            )
        )

    def put_graph_writes(self, thread_id: str, body: dict[str, Any]) -> int:
        return self._call(E.put_graph_writes(thread_id, body=body))

    def delete_graph_thread(self, thread_id: str) -> dict[str, Any]:
        return self._call(E.delete_graph_thread(thread_id))

    def copy_graph_thread(self, thread_id: str, *, target_thread_id: str) -> dict[str, Any]:
        return self._call(E.copy_graph_thread(thread_id, target_thread_id=target_thread_id))

    def prune_graph_thread(self, thread_id: str, *, strategy: str) -> dict[str, Any]:
        return self._call(E.prune_graph_thread(thread_id, strategy=strategy))

    def delete_graph_runs(self, run_ids: list[str]) -> dict[str, Any]:
        return self._call(E.delete_graph_runs(run_ids))

    # --- data lifecycle (admin tokens) ------------------------------------------
    def delete_session_content(self, session_id: str, *, reason: str) -> m.Deletion:
        """Delete the content of a closed or expired session: a job; poll `get_deletion`."""
        return self._call(E.delete_session_content(session_id, reason=reason))

    def get_deletion(self, deletion_id: str) -> m.Deletion:
        return self._call(E.get_deletion(deletion_id))

    def erase_user(self, user_id: str, *, reason: str) -> m.Erasure:
        """Close and delete every session of `user_id`, skipping (and listing) held ones."""
        return self._call(E.erase_user(user_id, reason=reason))

    def get_erasure(self, erasure_id: str) -> m.Erasure:
        return self._call(E.get_erasure(erasure_id))
