"""Typed errors for the Stateroom API's `{"error": {"code", "message", "details"}}` replies.

Catch by class for the HTTP meaning (`NotFound`, `Conflict`, ...) or look at
`.code` for the stable reason (`version_conflict`, `already_decided`, ...).
"""

from __future__ import annotations

from typing import Any


class StateroomError(Exception):
    """Any failed Stateroom call. `status` is None when no HTTP answer arrived."""

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        details: dict[str, Any] | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.code = code
        self.message = message
        self.details = details or {}
        self.status = status


class TransportError(StateroomError):
    """The server could not be reached (after any retries the call allowed)."""


class BadRequest(StateroomError):
    """400: malformed JSON or a body that is not an object."""


class Unauthorized(StateroomError):
    """401: missing, invalid or revoked token."""


class Forbidden(StateroomError):
    """403: the token lacks the role, or the user does not own the session."""


class NotFound(StateroomError):
    """404: unknown id, or another tenant's id (the two are indistinguishable)."""


class Conflict(StateroomError):
    """409: a version or revision conflict, duplicate id, or invalid state transition."""

    @property
    def current_version(self) -> int | None:
        return self.details.get("current_version")

    @property
    def current_revision(self) -> int | None:
        return self.details.get("current_revision")


class VersionConflict(Conflict):
    """409 `version_conflict` / `revision_conflict`: someone else wrote first; re-read."""


class InvalidTransition(Conflict):
    """409 `invalid_transition`: the state machine does not allow the change (or terminal)."""


class AlreadyDecided(Conflict):
    """409 `already_decided`: the approval was decided before; `details.decided_by` says by whom."""


class ContentDeleted(Conflict):
    """409 `content_deleted`: the session's content is being deleted; nothing may be written to
    it, its runs, tasks, approvals or effects. Stop: retrying cannot succeed."""


class RunClaimed(Conflict):
    """409 `run_claimed`: another worker's claim on the run is live (`claimed_by`, until
    `claim_until`); this worker may not write to the run. Stop: the other one is working."""

    @property
    def claimed_by(self) -> str | None:
        return self.details.get("claimed_by")

    @property
    def claim_until(self) -> str | None:
        return self.details.get("claim_until")


class AlreadyExists(Conflict):
    """409 `session_exists` / `run_exists` / `task_exists` / `approval_exists`: the id is taken."""


class PayloadTooLarge(StateroomError):
    """413: the body is over the server's size limit; `limit` is that limit in bytes."""

    @property
    def limit(self) -> int | None:
        value = self.details.get("limit_bytes")
        return value if isinstance(value, int) else None


class ItemTooLarge(PayloadTooLarge):
    """Refused by the client, before sending anything: one item alone makes a request over
    the server's body limit, so it can never be stored. `size` is that request's size in
    bytes, `limit` the limit (details `size_bytes`, `limit_bytes`); `status` is None."""

    @property
    def size(self) -> int | None:
        value = self.details.get("size_bytes")
        return value if isinstance(value, int) else None


class ValidationError(StateroomError):
    """422: field validation failed; `details` maps fields to messages."""


class IdempotencyKeyReused(ValidationError):
    """422 `idempotency_key_reused`: the key was used before with a different request."""


class RateLimited(StateroomError):
    """429: slow down; `retry_after` is the server's hint in seconds, if it gave one."""

    def __init__(self, *args: Any, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.retry_after = retry_after


class ServerError(StateroomError):
    """5xx: the server failed; nothing can be concluded about a non-idempotent write."""


_BY_STATUS: dict[int, type[StateroomError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationError,
    429: RateLimited,
}

_BY_CODE: dict[str, type[StateroomError]] = {
    "version_conflict": VersionConflict,
    "revision_conflict": VersionConflict,
    "invalid_transition": InvalidTransition,
    "already_decided": AlreadyDecided,
    "session_exists": AlreadyExists,
    "run_exists": AlreadyExists,
    "task_exists": AlreadyExists,
    "approval_exists": AlreadyExists,
    "idempotency_key_reused": IdempotencyKeyReused,
    "content_deleted": ContentDeleted,
    "run_claimed": RunClaimed,
}


def error_class(status: int, code: str) -> type[StateroomError]:
    """The most specific class for an HTTP status and error code."""
    base = _BY_STATUS.get(status) or (ServerError if status >= 500 else StateroomError)
    specific = _BY_CODE.get(code)
    if specific is not None and issubclass(specific, base):
        return specific
    return base
