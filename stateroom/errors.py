"""Domain errors with stable codes.

Stores raise these; the API exception handler and the console map them to
responses in one place. `status` is the HTTP status the API contract gives.
"""

from typing import Any


def field_path(*parts: str | int) -> str:
    """A key of a 422's `details`: the one format of every error key, API and stores alike.

    Names join with dots, list indexes go in brackets: `field_path("items", 3, "role")`
    is `items[3].role`, `field_path("error", "message")` is `error.message`. The
    value under the key is always a list of messages: `{"items[3].role": ["..."]}`,
    never a nested object. (Other statuses' details are facts, e.g.
    `{"current_version": 4}`.)
    """
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        elif path:
            path += f".{part}"
        else:
            path = str(part)
    return path


def error_body(code: str, message: str, details=None) -> dict:
    """The API's error shape: `{"error": {"code", "message", "details"}}`."""
    return {"error": {"code": code, "message": message, "details": details or {}}}


class StateroomError(Exception):
    status = 400
    code = "bad_request"
    # True for refusals that record a fact on the way (e.g. an attach that
    # finds the lease passed expires the session): the request's transaction
    # commits that fact instead of rolling back.
    keep_changes = False
    # A 403 or 404 is an attempt on something the caller may not see: the API records it
    # (`access.denied`, audit_app.services.record_access_denied). False for a refusal
    # that names nothing of anyone's (`UnusedName`).
    denial = True

    def __init__(
        self, message: str = "", *, code: str | None = None, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message or self.__class__.__name__
        if code:
            self.code = code
        self.details = details or {}


class NotFound(StateroomError):
    status = 404
    code = "not_found"


class UnusedName(NotFound):
    """404 for a name the caller chooses and has not used yet, e.g. a LangGraph thread id.

    Such a name lives in the caller's tenant only: asking for one it never wrote
    is routine (a runtime's first look at a new thread), not an attempt on
    another tenant's data, so it is no `access.denied` event."""

    denial = False


class Forbidden(StateroomError):
    status = 403
    code = "forbidden"


class Conflict(StateroomError):
    status = 409
    code = "conflict"


class Unprocessable(StateroomError):
    status = 422
    code = "validation_error"


class ContentDeleted(Conflict):
    """A content-bearing write to a session (or its runs, tasks, approvals, effects) whose
    content deletion has been requested. It comes before every other 409 of the write,
    `run_claimed` included: the content is gone whoever holds the run."""

    code = "content_deleted"

    def __init__(self, what: str, **details) -> None:
        super().__init__(
            f"The {what}'s content is deleted; it takes no new content.",
            details={k: v for k, v in details.items() if v is not None},
        )
