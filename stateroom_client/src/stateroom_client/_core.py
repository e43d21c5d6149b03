"""What the sync and async clients share: call specs, the retry rule, error mapping.

Each API call is described once, as a `Call` (method, path, body, how to parse
the answer, whether it may be retried); `StateroomClient` and
`AsyncStateroomClient` only differ in how they send it.

Retry rule: a call is retried (connect errors, 429 and 5xx only, with
exponential backoff) only when repeating it cannot do anything twice: reads,
writes carrying an idempotency key (`append_items` with a key, `record_effect`),
and writes the server documents as repeatable (`commit_effect` with the same
result, `heartbeat_session`). A compare-and-set (run transition, attach,
task save, decision) is never retried blindly: a lost answer followed by a
retry would report a conflict with our own write.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from . import models as m
from .errors import RateLimited, StateroomError, error_class

T = TypeVar("T")

API_PREFIX = "/api/v1"
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Failures where the server certainly or possibly never saw the request. Only
# retried for idempotent calls, like the statuses above.
RETRY_EXCEPTIONS: tuple[type[Exception], ...] = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.RemoteProtocolError,
)
# A body at least this large is sent on a connection of its own (`Connection: close`).
# A server may refuse it (413) before reading it, and the unread bytes left on a
# keep-alive connection would be parsed as the next request: the call after it
# would fail with "Server disconnected". Lowered to the server's limit once a 413
# has told it.
LARGE_BODY = 256 * 1024
# The server's request body limit unless told otherwise: its default
# STATEROOM_MAX_BODY_BYTES. A 413 states the real one (`body_limit_after`).
MAX_BODY = 1024 * 1024
# How much longer than `wait` a long-poll may take before the client gives up.
LONG_POLL_MARGIN = 10.0
MAX_WAIT = 30


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str  # relative to the API root, or an absolute `next` URL
    parse: Callable[[Any, int], T]
    params: Mapping[str, Any] | None = None
    body: Mapping[str, Any] | None = None
    retry: bool = False
    timeout: float | None = None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 3
    backoff: float = 0.25
    max_backoff: float = 5.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        base = min(self.backoff * (2**attempt), self.max_backoff)
        if retry_after is not None:
            # The server's hint, but never less than the backoff: a sub-second
            # wait can arrive rounded down to "Retry-After: 0".
            return float(min(max(retry_after, base), 30.0))
        return float(base * (0.5 + random.random() / 2))  # jitter: racing clients spread out


def api_root(base_url: str) -> str:
    root = base_url.rstrip("/")
    return root if root.endswith(API_PREFIX) else root + API_PREFIX


def url(call: Call[Any], root: str) -> str:
    if call.path.startswith(("http://", "https://")):
        return call.path
    return root + call.path


def clean_params(params: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    return {k: v for k, v in params.items() if v is not None}


def encode_body(body: Mapping[str, Any] | None) -> bytes | None:
    """The JSON of a request body, as httpx would send it (so its size is known first)."""
    if body is None:
        return None
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def body_headers(content: bytes | None, large: int) -> dict[str, str]:
    if content is None:
        return {}
    headers = {"Content-Type": "application/json"}
    if len(content) >= large:
        headers["Connection"] = "close"
    return headers


def _stated_limit(response: httpx.Response) -> int | None:
    """The body limit a 413 states, if it is one."""
    if response.status_code != 413:
        return None
    try:
        limit = response.json()["error"]["details"]["limit_bytes"]
    except (ValueError, KeyError, TypeError):
        return None
    return limit if isinstance(limit, int) and limit > 0 else None


def large_after(response: httpx.Response, large: int) -> int:
    """The size from which bodies go on their own connection, after `response`."""
    limit = _stated_limit(response)
    return large if limit is None else min(large, limit)


def body_limit_after(response: httpx.Response, known: int) -> int:
    """The server's body limit as known after `response`: the one a 413 states, else `known`."""
    return _stated_limit(response) or known


def retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def raise_for_error(response: httpx.Response) -> None:
    status = response.status_code
    if status < 400:
        return
    code, message = f"http_{status}", response.reason_phrase or "HTTP error"
    details: dict[str, Any] = {}
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        code = str(error.get("code") or code)
        message = str(error.get("message") or message)
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    elif response.text:
        message = response.text[:300]
    klass = error_class(status, code)
    if klass is RateLimited or issubclass(klass, RateLimited):
        raise klass(
            message, code=code, details=details, status=status, retry_after=retry_after(response)
        )
    raise klass(message, code=code, details=details, status=status)


def parse_response(call: Call[T], response: httpx.Response) -> T:
    raise_for_error(response)
    if response.status_code == 204 or not response.content:
        return call.parse(None, response.status_code)
    try:
        data = response.json()
    except ValueError as exc:
        raise StateroomError(
            "The server answered with something that is not JSON.",
            code="bad_response",
            status=response.status_code,
        ) from exc
    return call.parse(data, response.status_code)


def _id(value: str) -> str:
    return quote(str(value), safe="")


def _iso(value: datetime | str | None) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return value.isoformat()


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the fields the caller left out (None or UNSET)."""
    return {k: v for k, v in fields.items() if v is not None and v is not UNSET}


def _one(parse: Callable[[Any], T]) -> Callable[[Any, int], T]:
    return lambda data, status: parse(data)


def _page(parse: Callable[[Any], T]) -> Callable[[Any, int], m.Page[T]]:
    return lambda data, status: m.Page.from_json(data, parse)


def _raw(data: Any, status: int) -> dict[str, Any]:
    return dict(data or {})


def _first_effect(data: Any, status: int) -> m.Effect | None:
    page = m.Page.from_json(data, m.Effect.from_json)
    return page.results[0] if page.results else None


class Endpoints:
    """Every endpoint of API.md as a `Call`. Names match the client methods."""

    # --- who am I -----------------------------------------------------------
    @staticmethod
    def me() -> Call[m.Me]:
        return Call("GET", "/me", _one(m.Me.from_json), retry=True)

    # --- sessions -----------------------------------------------------------
    @staticmethod
    def create_session(
        *,
        user_id: str,
        session_id: str | None,
        metadata: dict[str, Any] | None,
        lease_seconds: int | None,
    ) -> Call[m.Session]:
        body = _body(
            session_id=session_id, user_id=user_id, metadata=metadata, lease_seconds=lease_seconds
        )
        return Call("POST", "/sessions", _one(m.Session.from_json), body=body)

    @staticmethod
    def get_session(session_id: str) -> Call[m.Session]:
        return Call("GET", f"/sessions/{_id(session_id)}", _one(m.Session.from_json), retry=True)

    @staticmethod
    def list_sessions(
        *, status: str | None, user_id: str | None, limit: int | None
    ) -> Call[m.Page[m.Session]]:
        params = {"status": status, "user_id": user_id, "limit": limit}
        return Call("GET", "/sessions", _page(m.Session.from_json), params=params, retry=True)

    @staticmethod
    def attach_session(
        session_id: str, *, run_id: str, user_id: str, expected_revision: int
    ) -> Call[m.Session]:
        body = {"run_id": run_id, "user_id": user_id, "expected_revision": expected_revision}
        path = f"/sessions/{_id(session_id)}/attach"
        return Call("POST", path, _one(m.Session.from_json), body=body)

    @staticmethod
    def detach_session(
        session_id: str, *, run_id: str, user_id: str, expected_revision: int
    ) -> Call[m.Session]:
        body = {"run_id": run_id, "user_id": user_id, "expected_revision": expected_revision}
        path = f"/sessions/{_id(session_id)}/detach"
        return Call("POST", path, _one(m.Session.from_json), body=body)

    @staticmethod
    def heartbeat_session(session_id: str, *, lease_seconds: int | None) -> Call[m.Session]:
        path = f"/sessions/{_id(session_id)}/heartbeat"
        body = _body(lease_seconds=lease_seconds)
        # Renewing a lease twice renews it once more: harmless, so retried.
        return Call("POST", path, _one(m.Session.from_json), body=body, retry=True)

    @staticmethod
    def close_session(session_id: str, *, reason: str | None) -> Call[m.Session]:
        path = f"/sessions/{_id(session_id)}/close"
        return Call("POST", path, _one(m.Session.from_json), body=_body(reason=reason))

    @staticmethod
    def get_items(
        session_id: str, *, after_seq: int | None, before_seq: int | None, limit: int | None
    ) -> Call[m.Page[m.SessionItem]]:
        params = {"after_seq": after_seq, "before_seq": before_seq, "limit": limit}
        path = f"/sessions/{_id(session_id)}/items"
        return Call("GET", path, _page(m.SessionItem.from_json), params=params, retry=True)

    @staticmethod
    def append_items(
        session_id: str,
        *,
        items: list[dict[str, Any]],
        run_id: str | None,
        idempotency_key: str | None,
        worker: str | None = None,
    ) -> Call[m.AppendResult]:
        body = _body(items=items, run_id=run_id, idempotency_key=idempotency_key, worker=worker)
        path = f"/sessions/{_id(session_id)}/items"
        return Call(
            "POST", path, m.AppendResult.from_json, body=body, retry=idempotency_key is not None
        )

    # --- runs ---------------------------------------------------------------
    @staticmethod
    def create_run(
        *,
        run_id: str | None,
        session_id: str | None,
        task_id: str | None,
        active_agent: str | None,
        deadline_at: datetime | str | None,
    ) -> Call[m.Run]:
        body = _body(
            run_id=run_id,
            session_id=session_id,
            task_id=task_id,
            active_agent=active_agent,
            deadline_at=_iso(deadline_at),
        )
        return Call("POST", "/runs", _one(m.Run.from_json), body=body)

    @staticmethod
    def get_run(run_id: str) -> Call[m.Run]:
        return Call("GET", f"/runs/{_id(run_id)}", _one(m.Run.from_json), retry=True)

    @staticmethod
    def list_runs(
        *,
        status: str | None,
        session_id: str | None,
        limit: int | None,
        unclaimed: bool | None = None,
    ) -> Call[m.Page[m.Run]]:
        params = {
            "status": status,
            "session_id": session_id,
            "limit": limit,
            "unclaimed": "true" if unclaimed else None,
        }
        return Call("GET", "/runs", _page(m.Run.from_json), params=params, retry=True)

    @staticmethod
    def transition_run(run_id: str, *, expected_version: int, **changes: Any) -> Call[m.Run]:
        body = {"expected_version": expected_version, **_body(**changes)}
        if changes.get("error", UNSET) is None:
            body["error"] = None  # an explicit None clears the error
        if "cost_used" in body:
            body["cost_used"] = str(body["cost_used"])
        path = f"/runs/{_id(run_id)}/transition"
        return Call("POST", path, _one(m.Run.from_json), body=body)

    @staticmethod
    def claim_run(
        run_id: str, *, worker: str, expected_version: int, lease_seconds: int | None
    ) -> Call[m.Run]:
        body = _body(worker=worker, expected_version=expected_version, lease_seconds=lease_seconds)
        return Call("POST", f"/runs/{_id(run_id)}/claim", _one(m.Run.from_json), body=body)

    @staticmethod
    def step_run(
        run_id: str,
        *,
        expected_version: int,
        worker: str | None,
        claim: bool,
        lease_seconds: int | None,
        events: list[dict[str, Any]] | None,
        changes: dict[str, Any] | None,
    ) -> Call[m.Run]:
        """Claim, events and transition in one request and one transaction (`/runs/{id}/step`)."""
        body = _body(expected_version=expected_version, worker=worker, events=events or None)
        if claim:
            body["claim"] = _body(lease_seconds=lease_seconds)
        if changes is not None:
            transition = _body(**changes)
            if changes.get("error", UNSET) is None:
                transition["error"] = None  # an explicit None clears the error
            if "cost_used" in transition:
                transition["cost_used"] = str(transition["cost_used"])
            body["transition"] = transition
        path = f"/runs/{_id(run_id)}/step"
        return Call("POST", path, lambda data, status: m.Run.from_json(data["run"]), body=body)

    @staticmethod
    def control_run(
        run_id: str, action: str, *, reason: str, expected_version: int | None
    ) -> Call[m.Run]:
        """`cancel`, `suspend` or `resume` (operator or admin tokens; cancel also the
        runtime token that created the run)."""
        body = _body(reason=reason, expected_version=expected_version)
        return Call("POST", f"/runs/{_id(run_id)}/{action}", _one(m.Run.from_json), body=body)

    @staticmethod
    def append_events(
        run_id: str, *, events: list[dict[str, Any]], worker: str | None = None
    ) -> Call[m.AppendResult]:
        path = f"/runs/{_id(run_id)}/events"
        body = _body(events=events, worker=worker)
        return Call("POST", path, m.AppendResult.from_json, body=body)

    @staticmethod
    def get_events(
        run_id: str, *, after: int | None, limit: int | None
    ) -> Call[m.Page[m.RunEvent]]:
        params = {"after": after, "limit": limit}
        path = f"/runs/{_id(run_id)}/events"
        return Call("GET", path, _page(m.RunEvent.from_json), params=params, retry=True)

    # --- approvals ----------------------------------------------------------
    @staticmethod
    def request_approval(
        run_id: str,
        *,
        expected_version: int,
        tool_name: str,
        arguments: dict[str, Any],
        risk: str,
        reason: str | None,
        expires_at: datetime | str | None,
        approval_id: str | None,
        allowed_decisions: list[str] | None = None,
        summary: str | None = None,
        key_arguments: list[str] | None = None,
        usual_arguments: dict[str, Any] | None = None,
        display: dict[str, Any] | None = None,
        replaces_approval_id: str | None = None,
        worker: str | None = None,
        arguments_schema: dict[str, Any] | None = None,
    ) -> Call[m.Approval]:
        body = _body(
            arguments_schema=arguments_schema,
            replaces_approval_id=replaces_approval_id,
            worker=worker,
            summary=summary,
            key_arguments=key_arguments,
            usual_arguments=usual_arguments,
            display=display,
            approval_id=approval_id,
            expected_version=expected_version,
            tool_name=tool_name,
            arguments=arguments,
            risk=risk,
            reason=reason,
            expires_at=_iso(expires_at),
            allowed_decisions=allowed_decisions,
        )
        path = f"/runs/{_id(run_id)}/approvals"
        return Call("POST", path, _one(m.Approval.from_json), body=body)

    @staticmethod
    def get_approval(approval_id: str, *, wait: float | None, timeout: float) -> Call[m.Approval]:
        path = f"/approvals/{_id(approval_id)}"
        if not wait:
            return Call("GET", path, _one(m.Approval.from_json), retry=True)
        wait = min(int(wait), MAX_WAIT)
        return Call(
            "GET",
            path,
            _one(m.Approval.from_json),
            params={"wait": wait},
            retry=True,
            timeout=max(timeout, wait + LONG_POLL_MARGIN),
        )

    @staticmethod
    def list_approvals(
        *, status: str | None, run_id: str | None, limit: int | None
    ) -> Call[m.Page[m.Approval]]:
        params = {"status": status, "run_id": run_id, "limit": limit}
        return Call("GET", "/approvals", _page(m.Approval.from_json), params=params, retry=True)

    @staticmethod
    def cancel_approval(
        approval_id: str, *, reason: str | None, worker: str | None = None
    ) -> Call[m.Approval]:
        path = f"/approvals/{_id(approval_id)}/cancel"
        body = _body(reason=reason, worker=worker)
        return Call("POST", path, _one(m.Approval.from_json), body=body)

    @staticmethod
    def void_approval(
        approval_id: str,
        *,
        reason_code: str,
        reason: str,
        details: dict[str, Any] | None,
        worker: str | None = None,
    ) -> Call[m.Approval]:
        path = f"/approvals/{_id(approval_id)}/void"
        body = _body(reason_code=reason_code, reason=reason, details=details, worker=worker)
        return Call("POST", path, _one(m.Approval.from_json), body=body)

    @staticmethod
    def report_approval_outcome(
        approval_id: str,
        *,
        outcome: str,
        error: dict[str, Any] | None = None,
        worker: str | None = None,
    ) -> Call[m.Approval]:
        path = f"/approvals/{_id(approval_id)}/outcome"
        body = _body(outcome=outcome, error=error, worker=worker)
        return Call("POST", path, _one(m.Approval.from_json), body=body)

    @staticmethod
    def decide_approval(
        approval_id: str,
        *,
        decision: str,
        reason: str,
        approved_arguments: dict[str, Any] | None,
        response: str | None = None,
    ) -> Call[m.Approval]:
        body = _body(
            decision=decision,
            reason=reason,
            approved_arguments=approved_arguments,
            response=response,
        )
        path = f"/approvals/{_id(approval_id)}/decision"
        return Call("POST", path, _one(m.Approval.from_json), body=body)

    # --- effects ------------------------------------------------------------
    @staticmethod
    def record_effect(
        run_id: str,
        *,
        idempotency_key: str,
        tool_name: str,
        request: dict[str, Any],
        node_id: str | None,
        approval_id: str | None,
        worker: str | None = None,
    ) -> Call[m.Effect]:
        body = _body(
            idempotency_key=idempotency_key,
            tool_name=tool_name,
            request=request,
            node_id=node_id,
            approval_id=approval_id,
            worker=worker,
        )
        path = f"/runs/{_id(run_id)}/effects"
        return Call("POST", path, m.Effect.from_json, body=body, retry=True)

    @staticmethod
    def commit_effect(effect_id: str, *, result: Any, worker: str | None = None) -> Call[m.Effect]:
        path = f"/effects/{_id(effect_id)}/commit"
        body = {"result": result, **_body(worker=worker)}
        return Call("POST", path, _one(m.Effect.from_json), body=body, retry=True)

    @staticmethod
    def fail_effect(
        effect_id: str, *, error: dict[str, Any], worker: str | None = None
    ) -> Call[m.Effect]:
        path = f"/effects/{_id(effect_id)}/fail"
        body = {"error": error, **_body(worker=worker)}
        return Call("POST", path, _one(m.Effect.from_json), body=body)

    @staticmethod
    def find_effect(idempotency_key: str) -> Call[m.Effect | None]:
        params = {"idempotency_key": idempotency_key}
        return Call("GET", "/effects", _first_effect, params=params, retry=True)

    @staticmethod
    def list_effects(*, idempotency_key: str | None, limit: int | None) -> Call[m.Page[m.Effect]]:
        params = {"idempotency_key": idempotency_key, "limit": limit}
        return Call("GET", "/effects", _page(m.Effect.from_json), params=params, retry=True)

    @staticmethod
    def list_run_effects(run_id: str, *, limit: int | None) -> Call[m.Page[m.Effect]]:
        path = f"/runs/{_id(run_id)}/effects"
        return Call("GET", path, _page(m.Effect.from_json), params={"limit": limit}, retry=True)

    # --- tasks --------------------------------------------------------------
    @staticmethod
    def create_task(
        *, objective: str, task_id: str | None, constraints: list[str] | None
    ) -> Call[m.Task]:
        body = _body(task_id=task_id, objective=objective, constraints=constraints)
        return Call("POST", "/tasks", _one(m.Task.from_json), body=body)

    @staticmethod
    def get_task(task_id: str) -> Call[m.Task]:
        return Call("GET", f"/tasks/{_id(task_id)}", _one(m.Task.from_json), retry=True)

    @staticmethod
    def save_task_state(task_id: str, *, expected_version: int, **fields: Any) -> Call[m.Task]:
        body = {"expected_version": expected_version, **_body(**fields)}
        path = f"/tasks/{_id(task_id)}/state"
        return Call("PUT", path, _one(m.Task.from_json), body=body)

    @staticmethod
    def append_checkpoint(
        task_id: str, *, schema_version: int, state: Any, node_id: str | None
    ) -> Call[m.CheckpointRef]:
        body = _body(schema_version=schema_version, state=state, node_id=node_id)
        path = f"/tasks/{_id(task_id)}/checkpoints"
        return Call("POST", path, _one(m.CheckpointRef.from_json), body=body)

    @staticmethod
    def latest_checkpoint(task_id: str) -> Call[m.Checkpoint]:
        path = f"/tasks/{_id(task_id)}/checkpoints/latest"
        return Call("GET", path, _one(m.Checkpoint.from_json), retry=True)

    @staticmethod
    def get_checkpoint(task_id: str, checkpoint_id: str) -> Call[m.Checkpoint]:
        path = f"/tasks/{_id(task_id)}/checkpoints/{_id(checkpoint_id)}"
        return Call("GET", path, _one(m.Checkpoint.from_json), retry=True)

    # --- LangGraph threads (stateroom_client.langgraph) ---------------------
    # Every one is safe to repeat: a put of the same checkpoint id replaces it
    # with itself, a repeated write is kept once, deletes and copies converge.
    # The thread id travels in the body or the query, never in the path: it is
    # any string LangGraph takes (`user@example.com/chat 1`). A put or a write
    # on a new thread makes its task.
    @staticmethod
    def put_graph_checkpoint(thread_id: str, *, body: dict[str, Any]) -> Call[dict[str, Any]]:
        body = {**body, "thread_id": str(thread_id)}
        return Call("POST", "/langgraph/checkpoints", _raw, body=body, retry=True)

    @staticmethod
    def list_graph_checkpoints(
        thread_id: str | None,
        *,
        checkpoint_ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
        metadata: str | None,
        limit: int | None,
    ) -> Call[m.Page[dict[str, Any]]]:
        """One thread's checkpoints, or (`thread_id` None) every thread's."""
        params = {
            "thread_id": None if thread_id is None else str(thread_id),
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "before": before,
            "metadata": metadata,
            "limit": limit,
        }
        return Call("GET", "/langgraph/checkpoints", _page(dict), params=params, retry=True)

    @staticmethod
    def put_graph_writes(thread_id: str, *, body: dict[str, Any]) -> Call[int]:
        body = {**body, "thread_id": str(thread_id)}
        parse = _one(lambda data: int(data["written"]))
        return Call("POST", "/langgraph/writes", parse, body=body, retry=True)

    @staticmethod
    def delete_graph_thread(thread_id: str) -> Call[dict[str, Any]]:
        body = {"thread_id": str(thread_id)}
        return Call("POST", "/langgraph/threads/delete", _raw, body=body, retry=True)

    @staticmethod
    def copy_graph_thread(thread_id: str, *, target_thread_id: str) -> Call[dict[str, Any]]:
        """Copy to `target_thread_id`, made when it is new."""
        body = {"thread_id": str(thread_id), "target_thread_id": str(target_thread_id)}
        return Call("POST", "/langgraph/threads/copy", _raw, body=body, retry=True)

    @staticmethod
    def prune_graph_thread(thread_id: str, *, strategy: str) -> Call[dict[str, Any]]:
        body = {"thread_id": str(thread_id), "strategy": strategy}
        return Call("POST", "/langgraph/threads/prune", _raw, body=body, retry=True)

    @staticmethod
    def delete_graph_runs(run_ids: list[str]) -> Call[dict[str, Any]]:
        body = {"run_ids": run_ids}
        return Call("POST", "/langgraph/runs/delete", _raw, body=body, retry=True)

    # --- data lifecycle (admin tokens) ------------------------------------------
    @staticmethod
    def delete_session_content(session_id: str, *, reason: str) -> Call[m.Deletion]:
        path = f"/sessions/{_id(session_id)}/deletions"
        return Call("POST", path, _one(m.Deletion.from_json), body={"reason": reason})

    @staticmethod
    def get_deletion(deletion_id: str) -> Call[m.Deletion]:
        path = f"/deletions/{_id(deletion_id)}"
        return Call("GET", path, _one(m.Deletion.from_json), retry=True)

    @staticmethod
    def erase_user(user_id: str, *, reason: str) -> Call[m.Erasure]:
        body = {"user_id": user_id, "reason": reason}
        return Call("POST", "/erasures", _one(m.Erasure.from_json), body=body)

    @staticmethod
    def get_erasure(erasure_id: str) -> Call[m.Erasure]:
        path = f"/erasures/{_id(erasure_id)}"
        return Call("GET", path, _one(m.Erasure.from_json), retry=True)


def next_page(call: Call[m.Page[T]], page: m.Page[T]) -> Call[m.Page[T]] | None:
    """The call for the page after `page` (the `next` URL carries the cursor and filters)."""
    if not page.next:
        return None
    return Call("GET", page.next, call.parse, retry=True, timeout=call.timeout)


DECISIONS = ("approve", "edit", "reject", "respond")


def assert_decision(decision: str) -> None:
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {', '.join(DECISIONS)}")


__all__ = ["UNSET", "Call", "Endpoints", "RetryPolicy", "StateroomError"]
