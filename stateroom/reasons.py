"""Why a person did what the audit log records: one rule for every store.

A reason (closing, expiring or holding a session, deleting content, erasing a
user, cancelling, suspending or resuming a run, settling an effect, holding
the whole tenant) is text of at most `MAX_REASON_LENGTH` characters. The
stores check it (`check_reason`); the API's serializers and the console's
forms take their limits from the same constant.
"""

from __future__ import annotations

from typing import Any

from stateroom.errors import Unprocessable
from stateroom.jsongate import text_problem

MAX_REASON_LENGTH = 2000


def check_reason(reason: Any) -> None:
    """422 `reason` when `reason` is not a string, is longer than the limit, or holds text
    PostgreSQL cannot store (a NUL character, a lone surrogate)."""
    if not isinstance(reason, str):
        raise Unprocessable("reason must be a string.", details={"reason": ["must be a string"]})
    if len(reason) > MAX_REASON_LENGTH:
        raise Unprocessable(
            "reason is too long.",
            details={"reason": [f"at most {MAX_REASON_LENGTH} characters"]},
        )
    if problem := text_problem(reason):
        raise Unprocessable("reason is invalid.", details={"reason": [problem]})


__all__ = ["MAX_REASON_LENGTH", "check_reason"]
