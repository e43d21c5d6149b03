"""The sessions store's input checks: what a value must be before a store method acts.

`*_errors` return the errors of one field (`{"field": ["why"]}`), `*_problem`
say why the database would refuse a value (or None), `check_reason` and
`validated_items` raise 422 (`Unprocessable`) naming each bad field. The
limits are the API's too (sessions_app.serializers imports them from
sessions_app.store).
"""

from __future__ import annotations

import math
from typing import Any

from stateroom.errors import Unprocessable, field_path
from stateroom.ids import PUBLIC_ID_RULE, is_valid_public_id
from stateroom.leases import MAX_SESSION_LEASE_SECONDS
from stateroom.reasons import MAX_REASON_LENGTH, check_reason  # noqa: F401 (re-exported)

MAX_ITEMS_PER_APPEND = 1000
MAX_USER_ID_LENGTH = 128
MAX_ROLE_LENGTH = 32
MAX_ITEM_TYPE_LENGTH = 64
MAX_IDEMPOTENCY_KEY_LENGTH = 200
# Why a session is closed, expired or held, its content deleted or its user erased: the
# one rule of `stateroom.reasons` (MAX_REASON_LENGTH, check_reason), re-exported here.


def is_short_text(value: Any, max_length: int) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= max_length and not text_problem(value)


def text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no lone surrogates)"
    return None


def json_problem(value: Any) -> str | None:
    """Why the database would refuse this JSON value (PostgreSQL jsonb takes no NaN, NUL
    or lone surrogates; Python's json module lets all three through), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must not contain NaN or Infinity"
    if isinstance(value, str):
        return text_problem(value)
    if isinstance(value, dict):
        for key, child in value.items():
            if problem := text_problem(str(key)) or json_problem(child):
                return problem
    elif isinstance(value, list):
        for child in value:
            if problem := json_problem(child):
                return problem
    return None


def user_id_errors(user_id: Any) -> dict[str, list[str]]:
    """A session's user (also the data subject an erasure names)."""
    if not is_short_text(user_id, MAX_USER_ID_LENGTH):
        return {
            "user_id": [f"must be a non-empty string of at most {MAX_USER_ID_LENGTH} characters"]
        }
    return {}


def lease_errors(lease_seconds: Any) -> dict[str, list[str]]:
    if (
        isinstance(lease_seconds, bool)
        or not isinstance(lease_seconds, int)
        or not 1 <= lease_seconds <= MAX_SESSION_LEASE_SECONDS
    ):
        return {"lease_seconds": [f"must be an integer from 1 to {MAX_SESSION_LEASE_SECONDS}"]}
    return {}


def run_id_errors(run_id: Any) -> dict[str, list[str]]:
    if not isinstance(run_id, str) or not is_valid_public_id(run_id):
        return {"run_id": [PUBLIC_ID_RULE]}
    return {}


def revision_errors(expected_revision: Any) -> dict[str, list[str]]:
    if (
        isinstance(expected_revision, bool)
        or not isinstance(expected_revision, int)
        or expected_revision < 0
    ):
        return {"expected_revision": ["must be a non-negative integer"]}
    return {}


def validated_items(items: Any, *, payloads: bool = True) -> list[dict[str, Any]]:
    """The items as model fields, or 422 naming each bad field (`items[3].role`).

    `payloads=False` checks that each payload is an object, not what is inside it:
    for a caller that encodes the items and checks their text (`SessionAppends`),
    and calls again with `payloads=True` to name a payload that text refuses.
    """
    if not isinstance(items, list) or not items:
        raise Unprocessable(
            "items must be a non-empty list.", details={"items": ["must be a non-empty list"]}
        )
    if len(items) > MAX_ITEMS_PER_APPEND:
        raise Unprocessable(
            "Too many items.", details={"items": [f"at most {MAX_ITEMS_PER_APPEND} per call"]}
        )
    errors: dict[str, list[str]] = {}
    rows = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            errors[field_path("items", index)] = ["must be an object"]
            continue
        for name, max_length in (("role", MAX_ROLE_LENGTH), ("item_type", MAX_ITEM_TYPE_LENGTH)):
            if not is_short_text(item.get(name), max_length):
                errors[field_path("items", index, name)] = [
                    f"must be a non-empty string of at most {max_length} characters"
                ]
        if not isinstance(item.get("payload"), dict):
            errors[field_path("items", index, "payload")] = ["must be an object"]
        elif payloads and (problem := json_problem(item["payload"])):
            errors[field_path("items", index, "payload")] = [problem]
        rows.append(
            {
                "role": item.get("role"),
                "item_type": item.get("item_type"),
                "payload": item.get("payload"),
            }
        )
    if errors:
        raise Unprocessable("Some items are invalid.", details=errors)
    return rows
