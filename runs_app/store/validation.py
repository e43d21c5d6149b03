"""The input checks of the run store and the limits of a run's fields (the API's too)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from stateroom.canonical import MAX_SAFE_INTEGER
from stateroom.errors import Unprocessable, field_path
from stateroom.ids import PUBLIC_ID_RULE, is_valid_public_id

from ..models import Run, RunStatus

# Keys `compare_and_set` accepts in `changes`.
RUN_CHANGE_FIELDS = frozenset(
    {
        "status",
        "turn_index",
        "active_agent",
        "current_node_id",
        "token_used",
        "cost_used",
        "model",
        "pending_approval_id",
        "last_checkpoint_id",
        "error",
    }
)
# The limits of a run's fields, for every caller: the API's serializers take theirs from here.
STRING_LIMITS = {
    "active_agent": 200,
    "current_node_id": 200,
    "model": 200,
    "pending_approval_id": 128,
    "last_checkpoint_id": 128,
}
_COUNTERS = ("turn_index", "token_used")
MAX_COUNTER = MAX_SAFE_INTEGER  # I-JSON: every JSON reader keeps it exactly
# cost_used is DECIMAL(18, 6) (Run.cost_used): what the column would round (a 7th
# decimal place) or cannot hold (13 digits before the point) is refused, by
# `cost_value`; the API's field calls it too (runs_app.api.CostField).
COST_MAX_DIGITS = Run._meta.get_field("cost_used").max_digits
COST_DECIMAL_PLACES = Run._meta.get_field("cost_used").decimal_places
_MAX_COST_EXPONENT = COST_MAX_DIGITS - COST_DECIMAL_PLACES
_MAX_COST = Decimal(10) ** _MAX_COST_EXPONENT
MAX_EVENTS_PER_APPEND = 1000
MAX_EVENT_TYPE_LENGTH = 64


def cost_value(value: Any) -> Decimal:
    """`cost_used` exactly as the column keeps it; ValueError saying why when it cannot be.

    Decimal places are counted as written (`"0.1000000"` has 7), as the API always did.
    """
    try:
        cost = Decimal(str(value))
    except (InvalidOperation, ValueError):
        cost = None
    if isinstance(value, bool) or cost is None or not cost.is_finite():
        raise ValueError("must be a decimal number")
    if not 0 <= cost < _MAX_COST:
        raise ValueError(f"must be from 0 to less than 10^{_MAX_COST_EXPONENT}")
    exponent = cost.as_tuple().exponent
    if isinstance(exponent, int) and -exponent > COST_DECIMAL_PLACES:
        raise ValueError(f"at most {COST_DECIMAL_PLACES} decimal places")
    return cost


def check_trace_id(trace_id: str | None) -> None:
    """A trace id is 32 lowercase hex digits, not all zero (W3C trace context); None is none."""
    if trace_id is None:
        return
    if (
        not isinstance(trace_id, str)
        or len(trace_id) != 32
        or trace_id.strip("0123456789abcdef")
        or not trace_id.strip("0")
    ):
        raise Unprocessable(
            "Invalid trace id.", details={"trace_id": ["32 lowercase hex digits, not all zero"]}
        )


def check_new_run(
    *,
    run_id: str | None,
    session_id: str | None,
    task_id: str | None,
    active_agent: str,
    deadline_at: datetime | None,
    now: datetime,
) -> None:
    """422 for what no new run can be: an id no row can have, a long agent, a past deadline."""
    # The ids a run names: its own (None: generated), its session's and task's (None
    # or "": none). An id no row can have is 422, like the API's.
    ids = {"run_id": run_id, "session_id": session_id or None, "task_id": task_id or None}
    bad_ids = {
        name: [PUBLIC_ID_RULE]
        for name, value in ids.items()
        if value is not None and not is_valid_public_id(value)
    }
    if bad_ids:
        raise Unprocessable("Invalid " + ", ".join(bad_ids) + ".", details=bad_ids)
    if len(active_agent or "") > STRING_LIMITS["active_agent"]:
        raise Unprocessable(
            "active_agent is too long.",
            details={"active_agent": [f"at most {STRING_LIMITS['active_agent']} characters"]},
        )
    if deadline_at is not None and deadline_at <= now:
        raise Unprocessable(
            "deadline_at lies in the past.",
            details={"deadline_at": ["must lie in the future"]},
        )


def clean_changes(changes: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(changes, dict):
        raise Unprocessable("changes must be an object.", details={"changes": ["an object"]})
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = {}
    for key, value in changes.items():
        if key not in RUN_CHANGE_FIELDS:
            errors[key] = ["not a field a run transition may change"]
        elif key == "status":
            if value not in RunStatus.values:
                errors[key] = [f"must be one of {', '.join(RunStatus.values)}"]
            else:
                values[key] = str(value)
        elif key in _COUNTERS:
            if isinstance(value, bool) or not isinstance(value, int):
                errors[key] = ["must be an integer"]
            elif not 0 <= value <= MAX_COUNTER:
                errors[key] = [f"must be from 0 to {MAX_COUNTER}"]
            else:
                values[key] = value
        elif key == "cost_used":
            try:
                values[key] = cost_value(value)
            except ValueError as exc:
                errors[key] = [str(exc)]
        elif key == "error":
            if value is not None and not isinstance(value, dict):
                errors[key] = ["must be an object or null"]
            else:
                values[key] = value
        else:
            text = "" if value is None else value
            if not isinstance(text, str):
                errors[key] = ["must be a string"]
            elif len(text) > STRING_LIMITS[key]:
                errors[key] = [f"at most {STRING_LIMITS[key]} characters"]
            else:
                values[key] = text
    if errors:
        raise Unprocessable("Some changes are invalid.", details=errors)
    return values


def clean_events(events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    if not isinstance(events, list) or not events:
        raise Unprocessable(
            "events must be a non-empty list.", details={"events": ["at least one event"]}
        )
    if len(events) > MAX_EVENTS_PER_APPEND:
        raise Unprocessable(
            "Too many events.", details={"events": [f"at most {MAX_EVENTS_PER_APPEND}"]}
        )
    rows = []
    for i, event in enumerate(events):
        if not isinstance(event, dict):
            raise Unprocessable(
                "Each event is an object.",
                details={field_path("events", i): ["must be an object"]},
            )
        kind, node_id = event.get("type"), event.get("node_id") or ""
        if not isinstance(kind, str) or not 1 <= len(kind) <= MAX_EVENT_TYPE_LENGTH:
            raise Unprocessable(
                "Invalid event type.",
                details={
                    field_path("events", i, "type"): [f"1-{MAX_EVENT_TYPE_LENGTH} characters"]
                },
            )
        limit = STRING_LIMITS["current_node_id"]
        if not isinstance(node_id, str) or len(node_id) > limit:
            raise Unprocessable(
                "Invalid node_id.",
                details={field_path("events", i, "node_id"): [f"at most {limit} characters"]},
            )
        rows.append({"type": kind, "node_id": node_id, "payload": event.get("payload")})
    return rows
