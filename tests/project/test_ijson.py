"""Numbers are I-JSON everywhere: one rule at the JSON gate, digests of what is stored.

The rule (stateroom.jsongate): a number, however written, lies within
±(2**53 - 1) and is finite; anything else is 422 `number_out_of_range`
naming its path, and nothing is written. Every number the gate lets through
comes back from jsonb as the same value with the same RFC 8785 spelling, so
a client recomputes `call_digest` (sha256 of the RFC 8785 JSON of
`[tool_name, arguments]`) and an effect's `request_digest` (of
`{"tool_name", "request"}`) from what GET returns, with the `rfc8785` package.
"""

from __future__ import annotations

import hashlib
import json
import math
from itertools import count
from typing import Any

import pytest
import rfc8785
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from approvals_app.models import ApprovalRequest
from effects_app.models import ExternalEffect
from runs_app.models import RunEvent
from sessions_app.models import Session, SessionItem
from stateroom.actor import Actor
from tasks_app.models import Task, TaskCheckpoint
from tasks_app.store import TaskStateStore
from tenancy_app.scoping import in_tenant
from tests.runs.conftest import make_run

from .test_cross_tenant import fill, snapshot
from .test_hostile_input import (
    assert_error_shape,
    body_with,
    free_form,
    hole_paths,
    resolve,
    send,
    write_operations,
)

JSON = "application/json"
MAX_SAFE = 2**53 - 1
# Numbers at the edges, as JSON text: the gate's verdict on each is the rule.
EDGES = [
    2**53 - 1,
    -(2**53 - 1),
    2**53,
    -(2**53),
    2**64,
    9007199254740991.0,
    9007199254740992.0,
    1e15,
    1e16,
    -1e16,
    1e21,
    1.5e300,
    1.7976931348623157e308,
    1e-320,
    5e-324,
    -0.0,
    0.0,
    0.1,
    1.0,
    -3e-7,
    123456789.125,
]


def refused(value: Any) -> bool:
    """The rule, written independently of the gate: a number beyond ±(2**53 - 1)."""
    if isinstance(value, dict):
        return any(refused(v) for v in value.values())
    if isinstance(value, list):
        return any(refused(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not math.isfinite(value) or abs(value) > MAX_SAFE


def jcs(value: Any) -> bytes:
    return rfc8785.dumps(value)


def sha(value: Any) -> str:
    return hashlib.sha256(jcs(value)).hexdigest()


def rows(tenant) -> tuple:
    """Everything a refused write could have touched."""
    with in_tenant(tenant):
        counted = (ApprovalRequest, ExternalEffect, RunEvent, Session, SessionItem, TaskCheckpoint)
        tasks = list(Task.objects.values_list("task_id", "version"))
        return snapshot(tenant), [model.objects.count() for model in counted], tasks


def post(client: Client, path: str, body: Any):
    return client.post(path, json.dumps(body), content_type=JSON)


# --- the row of issue 31: a number >= 2**53 asked for approval ---------------------------
@pytest.mark.parametrize("number", ["1e16", "9007199254740992", "9007199254740992.0", "1.5e300"])
def test_approval_arguments_beyond_2_53_are_refused_and_change_nothing(api_a, tenant_a, number):
    make_run(tenant_a, "running", run_id="run-1")
    before = rows(tenant_a)
    body = (
        '{"expected_version": 2, "tool_name": "send_refund", "risk": "low",'
        f' "arguments": {{"to": "acct-9", "amount": {number}}}}}'
    )
    response = api_a.post("/api/v1/runs/run-1/approvals", body, content_type=JSON)
    error = assert_error_shape(response, number)
    assert (response.status_code, error["code"]) == (422, "number_out_of_range")
    assert list(error["details"]) == ["arguments.amount"]
    assert rows(tenant_a) == before


@pytest.fixture
def targets(tenant_a, api_a) -> dict[str, str]:
    """A session, a task and a running run of tenant A that JSON can be written to."""
    make_run(tenant_a, "running", run_id="run-w")
    assert post(api_a, "/api/v1/sessions", {"session_id": "s-1", "user_id": "u"}).status_code == 201
    with in_tenant(tenant_a):
        TaskStateStore(tenant_a, Actor.system("test")).create(task_id="T-7", objective="o")
    return {
        "items": "/api/v1/sessions/s-1/items",
        "checkpoints": "/api/v1/tasks/T-7/checkpoints",
        "effects": "/api/v1/runs/run-w/effects",
        "events": "/api/v1/runs/run-w/events",
        "session metadata": "/api/v1/sessions",
        "langgraph": "/api/v1/tasks/T-7/langgraph/checkpoints",
    }


def write_body(target: str, value: Any) -> dict:
    return {
        "items": {"items": [{"role": "user", "item_type": "message", "payload": {"v": value}}]},
        "checkpoints": {"schema_version": 1, "state": {"v": value}},
        "effects": {"idempotency_key": "k", "tool_name": "t", "request": {"v": value}},
        "events": {"events": [{"type": "note", "payload": {"v": value}}]},
        "session metadata": {"user_id": "u", "metadata": {"v": value}},
    }[target]


WHERE = {
    "items": "items[0].payload.v",
    "checkpoints": "state.v",
    "effects": "request.v",
    "events": "events[0].payload.v",
    "session metadata": "metadata.v",
}


@pytest.mark.parametrize("target", list(WHERE))
def test_every_json_write_refuses_a_float_that_jsonb_keeps_as_a_big_integer(
    api_a, tenant_a, targets, target
):
    before = rows(tenant_a)
    response = post(api_a, targets[target], write_body(target, 1e16))
    error = assert_error_shape(response, target)
    assert (response.status_code, error["code"]) == (422, "number_out_of_range")
    assert error["details"] == {
        WHERE[target]: ["is outside ±(2**53 - 1), the integers every JSON reader keeps exactly"]
    }
    assert rows(tenant_a) == before


@pytest.fixture
def admin_api(make_token, tenant_a) -> Client:
    """A token that may call every write (decisions and voids included)."""
    return Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='admin')}"})


def free_form_holes(schema: dict, body_schema: dict) -> list[list[Any]]:
    """The paths of the free-form JSON objects of a request body (payload, arguments, ...)."""
    found = []
    for hole in hole_paths(schema, body_schema, []):
        node = resolve(schema, body_schema)
        for step in hole:
            node = resolve(
                schema,
                node["items"]
                if isinstance(step, int)
                else node.get("properties", {}).get(step, {}),
            )
        if node.get("type") == "object":
            found.append(hole)
    return found


def test_every_free_form_json_field_of_every_write_refuses_1e16(
    schema, objects_a, tenant_a, admin_api
):
    before = rows(tenant_a)
    sent = set()
    for method, path, body_schema in write_operations(schema):
        for hole in free_form_holes(schema, body_schema):
            raw = body_with(hole, free_form("1e16"))
            response = send(admin_api, method, fill(path, objects_a), raw)
            error = assert_error_shape(response, (path, hole))
            assert error["code"] == "number_out_of_range", (path, hole, error)
            where = ".".join(str(s) for s in hole).replace(".0", "[0]") + ".k"
            assert list(error["details"]) == [where], (path, hole, error)
            sent.add((path, where))
    # Approval arguments and edits, items, events, effects, checkpoints, LangGraph, metadata.
    assert len(sent) >= 12, sorted(sent)
    assert rows(tenant_a) == before


# --- the property: refused, or read back the same and its digest recomputes ----------------
KEYS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**54), max_value=2**54)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(EDGES)
    | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def assert_refused_or_kept(response, value: Any) -> dict | None:
    """None when the gate refused `value` (as the rule says), else the created body."""
    if refused(value):
        error = assert_error_shape(response, value)
        assert (response.status_code, error["code"]) == (422, "number_out_of_range"), value
        return None
    assert response.status_code in (200, 201), (value, response.content[:300])
    return response.json()


@PROPERTY
@given(value=VALUES)
def test_approval_arguments_read_back_the_same_and_call_digest_recomputes(api_a, tenant_a, value):
    run_id = f"run-p{next(_runs)}"
    make_run(tenant_a, "running", run_id=run_id)
    body = {"expected_version": 2, "tool_name": "t", "risk": "low", "arguments": {"v": value}}
    created = assert_refused_or_kept(post(api_a, f"/api/v1/runs/{run_id}/approvals", body), value)
    if created is None:
        return
    read = api_a.get(f"/api/v1/approvals/{created['approval_id']}").json()
    assert jcs(read["arguments"]) == jcs({"v": value})
    assert read["arguments"] == {"v": value}
    # call_digest as the project defines it (approvals_app.store.call_digest), from GET.
    assert read["call_digest"] == created["call_digest"] == sha(["t", read["arguments"]])


_runs = count()


@PROPERTY
@given(value=VALUES)
def test_session_items_read_back_the_same(api_a, targets, value):
    created = assert_refused_or_kept(
        post(api_a, targets["items"], write_body("items", value)), value
    )
    if created is None:
        return
    page = api_a.get(f"{targets['items']}?after_seq={created['first_seq'] - 1}").json()
    [item] = page["results"]
    assert jcs(item["payload"]) == jcs({"v": value})
    assert item["payload"] == {"v": value}


@PROPERTY
@given(value=VALUES)
def test_checkpoints_read_back_the_same(api_a, targets, value):
    body = write_body("checkpoints", value)
    created = assert_refused_or_kept(post(api_a, targets["checkpoints"], body), value)
    if created is None:
        return
    read = api_a.get(f"{targets['checkpoints']}/{created['checkpoint_id']}").json()
    assert jcs(read["state"]) == jcs({"v": value})
    assert read["state"] == {"v": value}
    assert read["size_bytes"] == len(jcs({"v": value}))


@PROPERTY
@given(value=VALUES)
def test_effect_requests_read_back_the_same_and_request_digest_recomputes(api_a, targets, value):
    key = f"k-{next(_runs)}"
    body = {**write_body("effects", value), "idempotency_key": key}
    created = assert_refused_or_kept(post(api_a, targets["effects"], body), value)
    if created is None:
        return
    [read] = api_a.get(f"/api/v1/effects?idempotency_key={key}").json()["results"]
    assert jcs(read["request"]) == jcs({"v": value})
    assert read["request"] == {"v": value}
    assert read["request_digest"] == sha({"tool_name": "t", "request": read["request"]})


@PROPERTY
@given(value=VALUES)
def test_langgraph_json_values_read_back_the_same(api_a, targets, value):
    n = next(_runs)
    versions = {"v": f"{n}.0"}
    body = {
        "checkpoint": {
            "v": 1,
            "id": f"c{n:06d}",
            "ts": "2026-11-30T10:00:00+00:00",
            "channel_versions": versions,
            "versions_seen": {},
            "updated_channels": ["v"],
        },
        "blobs": [{"channel": "v", "version": f"{n}.0", "type": "json", "value": {"v": value}}],
    }
    created = assert_refused_or_kept(post(api_a, targets["langgraph"], body), value)
    if created is None:
        return
    newest = api_a.get(f"{targets['langgraph']}?limit=1").json()["results"][0]
    assert newest["checkpoint"]["id"] == f"c{n:06d}"
    [channel] = newest["channel_values"]
    assert jcs(channel["value"]) == jcs({"v": value})
    assert channel["value"] == {"v": value}
