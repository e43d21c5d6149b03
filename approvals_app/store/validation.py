"""The input checks of the approval store and their limits (the API's serializers import them).

Field lengths come from the model (`max_length`): one rule, one place.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from stateroom.canonical import canonical_json
from stateroom.errors import Unprocessable
from stateroom.ids import PUBLIC_ID_RULE, is_valid_public_id

from ..models import (
    DEFAULT_ALLOWED_DECISIONS,
    ApprovalRequest,
    ApprovalStatus,
    Decision,
    Risk,
    ToolOutcome,
    VoidReason,
)


def max_length(field: str) -> int:
    """The `max_length` of a field of `ApprovalRequest` (of its items, for an array)."""
    column = ApprovalRequest._meta.get_field(field)
    return getattr(column, "base_field", column).max_length


def clipped(field: str, text: str) -> str:
    """`text`, cut to what the field of `ApprovalRequest` holds."""
    return text[: max_length(field)]


DECISIONS = tuple(Decision.values)
# Decisions that let the call run (and so count for four-eyes and take its reason rule).
RUNS_THE_CALL = frozenset({Decision.APPROVE, Decision.EDIT})
REASON_REQUIRED_RISKS = frozenset({Risk.HIGH, Risk.CRITICAL})
# The limits of a request and a decision, for every caller (the API's serializers import them).
MAX_TOOL_NAME_LENGTH = max_length("tool_name")
MAX_SUMMARY_LENGTH = max_length("summary")
MAX_KEY_ARGUMENTS = 3
MAX_ARGUMENT_NAME_LENGTH = max_length("key_arguments")
MAX_RESPONSE_LENGTH = 20_000
# Why a person decided (audited; shown to the runtime): the console's form takes it too.
MAX_DECISION_REASON_LENGTH = 4_000
# What a runtime may void: an approval still waiting, or approved but its call not run.
VOIDABLE = frozenset({ApprovalStatus.PENDING, ApprovalStatus.APPROVED})
MAX_VOID_REASON_LENGTH = 2_000
# The void's evidence (e.g. a tool's old and new JSON schema), as canonical JSON.
MAX_VOID_DETAILS_BYTES = 64 * 1024
# What a runtime says of a failed call: the tool's error (message and type), as canonical JSON.
MAX_OUTCOME_ERROR_MESSAGE_LENGTH = 4_000
MAX_OUTCOME_ERROR_BYTES = 16 * 1024


def check_request(
    *,
    tool_name: str,
    arguments: Any,
    risk: str,
    reason: str,
    expires_at: datetime | None,
    approval_id: str | None,
    now: datetime,
) -> None:
    """A request's own fields: 422 naming each one that is invalid."""
    errors: dict[str, list[str]] = {}
    if not isinstance(tool_name, str) or not 1 <= len(tool_name) <= MAX_TOOL_NAME_LENGTH:
        errors["tool_name"] = [f"1-{MAX_TOOL_NAME_LENGTH} characters"]
    if not isinstance(arguments, dict):
        errors["arguments"] = ["must be an object"]
    else:
        try:
            canonical_json(arguments)
        except (TypeError, ValueError):
            errors["arguments"] = ["must be JSON"]
    if risk not in Risk.values:
        errors["risk"] = [f"must be one of {', '.join(Risk.values)}"]
    if not isinstance(reason, str):
        errors["reason"] = ["must be a string"]
    if expires_at is not None and (expires_at.tzinfo is None or expires_at <= now):
        errors["expires_at"] = ["must be a time in the future, with a time zone"]
    if approval_id is not None and not is_valid_public_id(approval_id):
        errors["approval_id"] = [PUBLIC_ID_RULE]
    if errors:
        raise Unprocessable("Some fields are invalid.", details=errors)


def check_void(reason_code: Any, reason: Any, details: Any) -> None:
    """A void's own shape: a known reason code, the runtime's reason, JSON details within bounds."""
    errors: dict[str, list[str]] = {}
    if reason_code not in VoidReason.values:
        errors["reason_code"] = [f"must be one of {', '.join(VoidReason.values)}"]
    if not isinstance(reason, str) or not reason.strip():
        errors["reason"] = ["required: why the runtime can no longer honour it"]
    elif len(reason) > MAX_VOID_REASON_LENGTH:
        errors["reason"] = [f"at most {MAX_VOID_REASON_LENGTH} characters"]
    if details is not None:
        if not isinstance(details, dict):
            errors["details"] = ["must be an object"]
        else:
            try:
                size = len(canonical_json(details).encode())
            except (TypeError, ValueError):
                errors["details"] = ["must be JSON"]
            else:
                if size > MAX_VOID_DETAILS_BYTES:
                    errors["details"] = [f"at most {MAX_VOID_DETAILS_BYTES} bytes of JSON"]
    if errors:
        raise Unprocessable("The void is invalid.", details=errors)


def check_outcome(outcome: Any, error: Any) -> None:
    """A reported outcome's shape: failed carries the tool's error `{message, type?}`."""
    errors: dict[str, list[str]] = {}
    if outcome not in ToolOutcome.values:
        errors["outcome"] = [f"must be one of {', '.join(ToolOutcome.values)}"]
    elif outcome == ToolOutcome.FAILED:
        message = error.get("message") if isinstance(error, dict) else None
        if not isinstance(message, str) or not message.strip():
            errors["error"] = ["required with failed: an object with the tool's error message"]
        elif len(message) > MAX_OUTCOME_ERROR_MESSAGE_LENGTH:
            errors["error"] = [f"message: at most {MAX_OUTCOME_ERROR_MESSAGE_LENGTH} characters"]
        elif len(canonical_json(error).encode()) > MAX_OUTCOME_ERROR_BYTES:
            errors["error"] = [f"at most {MAX_OUTCOME_ERROR_BYTES} bytes of JSON"]
    elif error is not None:
        errors["error"] = ["only with failed"]
    if errors:
        raise Unprocessable("The outcome is invalid.", details=errors)


def checked_decisions(allowed: Any) -> list[str]:
    """The declared decisions in their canonical order; 422 for an empty or unknown set."""
    if allowed is None:
        return list(DEFAULT_ALLOWED_DECISIONS)
    if (
        not isinstance(allowed, list | tuple)
        or not allowed
        or not all(isinstance(d, str) and d in DECISIONS for d in allowed)
    ):
        raise Unprocessable(
            "allowed_decisions must be a non-empty list of decisions.",
            details={"allowed_decisions": [f"a non-empty subset of {', '.join(DECISIONS)}"]},
        )
    return [d for d in DECISIONS if d in allowed]


def presentation(summary: Any, key_arguments: Any, usual_arguments: Any) -> tuple[str, list[str]]:
    """The inbox's summary and key arguments, checked; 422 when malformed."""
    errors: dict[str, list[str]] = {}
    summary = "" if summary is None else summary
    if not isinstance(summary, str) or len(summary) > MAX_SUMMARY_LENGTH or "\n" in summary:
        errors["summary"] = [f"one line of at most {MAX_SUMMARY_LENGTH} characters"]
    keys = [] if key_arguments is None else key_arguments
    if (
        not isinstance(keys, list | tuple)
        or len(keys) > MAX_KEY_ARGUMENTS
        or not all(isinstance(k, str) and 0 < len(k) <= MAX_ARGUMENT_NAME_LENGTH for k in keys)
    ):
        errors["key_arguments"] = [
            f"at most {MAX_KEY_ARGUMENTS} argument names of 1-{MAX_ARGUMENT_NAME_LENGTH} characters"
        ]
    if usual_arguments is not None and not isinstance(usual_arguments, dict):
        errors["usual_arguments"] = ["must be an object"]
    if errors:
        raise Unprocessable("Some fields are invalid.", details=errors)
    return summary, list(keys)


def check_decision(decision: Any, reason: Any, approved_arguments: Any, response: Any) -> None:
    """The decision's own shape: edit carries arguments, respond a response, nothing else does."""
    errors: dict[str, list[str]] = {}
    if decision not in DECISIONS:
        errors["decision"] = [f"must be one of {', '.join(DECISIONS)}"]
    if reason is not None and not isinstance(reason, str):
        errors["reason"] = ["must be a string"]
    elif len(reason or "") > MAX_DECISION_REASON_LENGTH:
        errors["reason"] = [f"at most {MAX_DECISION_REASON_LENGTH} characters"]
    if decision == Decision.EDIT:
        if not isinstance(approved_arguments, dict):
            errors["approved_arguments"] = ["required with edit: the arguments to run (an object)"]
    elif approved_arguments is not None:
        errors["approved_arguments"] = ["only with edit"]
    if decision == Decision.RESPOND:
        if not isinstance(response, str) or not response.strip():
            errors["response"] = ["required with respond: the text the model gets"]
        elif len(response) > MAX_RESPONSE_LENGTH:
            errors["response"] = [f"at most {MAX_RESPONSE_LENGTH} characters"]
    elif response not in (None, ""):
        errors["response"] = ["only with respond"]
    if errors:
        raise Unprocessable("The decision is invalid.", details=errors)
