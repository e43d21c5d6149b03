"""One place for each rule (issue 12): the API and the store refuse the same value alike.

Every limit below has one definition, in the store (or, shared by every app,
in `stateroom.ids`); the API's serializer imports it. For each, the limit
itself is accepted by both, limit + 1 is refused by both as 422
`validation_error` under the same details key (`stateroom.errors.field_path`).
"""

from collections.abc import Callable
from decimal import Decimal

import pytest
from django.test import Client

from approvals_app.store import (
    MAX_DECISION_REASON_LENGTH,
    MAX_KEY_ARGUMENTS,
    MAX_SUMMARY_LENGTH,
    MAX_TOOL_NAME_LENGTH,
    ApprovalStore,
)
from effects_app.store import EffectStore
from lifecycle_app import deletion
from lifecycle_app.erasure import ErasureStore
from runs_app.store import (
    COST_DECIMAL_PLACES,
    COST_MAX_DIGITS,
    MAX_EVENT_TYPE_LENGTH,
    RunStateStore,
)
from sessions_app.store import MAX_REASON_LENGTH, MAX_USER_ID_LENGTH, SessionStore
from stateroom.actor import Actor
from stateroom.contract import flatten
from stateroom.errors import NotFound, Unprocessable, field_path
from stateroom.ids import MAX_PUBLIC_ID_LENGTH, MAX_WORKER_LENGTH, PUBLIC_ID_RULE
from tasks_app.store import MAX_CONSTRAINT_LENGTH, MAX_LIST_ITEM_LENGTH, TaskStateStore
from tenancy_app.models import TokenRole
from tenancy_app.scoping import in_tenant

JSON = "application/json"
ACTOR = Actor.system("test")


def _post(client: Client, path: str, body: dict, method: str = "post"):
    return getattr(client, method)(path, body, content_type=JSON)


def _api_refuses(response, key: str) -> list[str]:
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert key in error["details"], error["details"]
    return error["details"][key]


def _store_refuses(call: Callable[[], object], key: str) -> list[str]:
    with pytest.raises(Unprocessable) as refused:
        call()
    assert refused.value.code == "validation_error"
    assert key in refused.value.details, refused.value.details
    return refused.value.details[key]


def _running_run(tenant, run_id: str) -> int:
    with in_tenant(tenant):
        runs = RunStateStore(tenant, ACTOR)
        runs.create(run_id=run_id)
        return runs.compare_and_set(
            run_id=run_id, expected_version=1, changes={"status": "running"}
        ).version


# --- ids: stateroom.ids, checked by every store ---------------------------------
@pytest.mark.parametrize(
    ("path", "field", "extra", "store_call"),
    [
        ("/api/v1/runs", "run_id", {}, lambda t, v: RunStateStore(t, ACTOR).create(run_id=v)),
        (
            "/api/v1/sessions",
            "session_id",
            {"user_id": "u"},
            lambda t, v: SessionStore(t, ACTOR).create(session_id=v, user_id="u"),
        ),
        (
            "/api/v1/tasks",
            "task_id",
            {"objective": "o"},
            lambda t, v: TaskStateStore(t, ACTOR).create(task_id=v, objective="o"),
        ),
    ],
)
def test_public_id_rule_is_one(api_a, tenant_a, path, field, extra, store_call):
    longest = "a" * MAX_PUBLIC_ID_LENGTH
    assert _post(api_a, path, {field: longest, **extra}).status_code == 201
    with in_tenant(tenant_a):
        store_call(tenant_a, "b" * MAX_PUBLIC_ID_LENGTH)
    for bad in ("c" * (MAX_PUBLIC_ID_LENGTH + 1), "bad id/"):
        api = _api_refuses(_post(api_a, path, {field: bad, **extra}), field)
        with in_tenant(tenant_a):
            store = _store_refuses(lambda bad=bad: store_call(tenant_a, bad), field)
        assert api == store == [PUBLIC_ID_RULE]


@pytest.mark.parametrize("field", ["session_id", "task_id"])
def test_ids_a_run_names_follow_the_rule_in_the_store_too(api_a, tenant_a, field):
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ACTOR).create(session_id="s" * MAX_PUBLIC_ID_LENGTH, user_id="u")
        TaskStateStore(tenant_a, ACTOR).create(task_id="s" * MAX_PUBLIC_ID_LENGTH, objective="o")
    assert _post(api_a, "/api/v1/runs", {field: "s" * MAX_PUBLIC_ID_LENGTH}).status_code == 201
    bad = "s" * (MAX_PUBLIC_ID_LENGTH + 1)
    api = _api_refuses(_post(api_a, "/api/v1/runs", {field: bad}), field)
    with in_tenant(tenant_a):
        store = _store_refuses(lambda: RunStateStore(tenant_a, ACTOR).create(**{field: bad}), field)
    assert api == store == [PUBLIC_ID_RULE]
    # An id of the right form that names nothing is still 404, from both.
    assert _post(api_a, "/api/v1/runs", {field: "nothing"}).status_code == 404


# --- worker: stateroom.ids.MAX_WORKER_LENGTH (runs claim, every fenced write) -----
def test_worker_limit_is_one(api_a, tenant_a):
    version = _running_run(tenant_a, "run-w")
    claim = "/api/v1/runs/run-w/claim"
    ok = _post(api_a, claim, {"worker": "w" * MAX_WORKER_LENGTH, "expected_version": version})
    assert ok.status_code == 200, ok.content
    version = ok.json()["version"]
    too_long = "w" * (MAX_WORKER_LENGTH + 1)
    _api_refuses(_post(api_a, claim, {"worker": too_long, "expected_version": version}), "worker")
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: RunStateStore(tenant_a, ACTOR).claim(
                run_id="run-w", worker=too_long, expected_version=version
            ),
            "worker",
        )
    # Session items written for the run take the same limit.
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ACTOR).create(session_id="sess-w", user_id="u")
    item = {"role": "user", "item_type": "message", "payload": {}}
    body = {"items": [item], "run_id": "run-w", "worker": too_long}
    _api_refuses(_post(api_a, "/api/v1/sessions/sess-w/items", body), "worker")
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: SessionStore(tenant_a, ACTOR).append_items(
                session_id="sess-w", items=[item], run_id="run-w", worker=too_long
            ),
            "worker",
        )


# --- runs_app.store -----------------------------------------------------------
def test_event_type_limit_is_one(api_a, tenant_a):
    _running_run(tenant_a, "run-e")
    path = "/api/v1/runs/run-e/events"
    event = {"type": "t" * MAX_EVENT_TYPE_LENGTH, "payload": {}}
    assert _post(api_a, path, {"events": [event]}).status_code == 201
    too_long = [{"type": "t" * (MAX_EVENT_TYPE_LENGTH + 1), "payload": {}}]
    key = field_path("events", 0, "type")
    assert key == "events[0].type"
    _api_refuses(_post(api_a, path, {"events": too_long}), key)
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: RunStateStore(tenant_a, ACTOR).append_events(run_id="run-e", events=too_long),
            key,
        )


# --- approvals_app.store --------------------------------------------------------
@pytest.mark.parametrize(
    ("field", "ok", "bad"),
    [
        ("tool_name", "t" * MAX_TOOL_NAME_LENGTH, "t" * (MAX_TOOL_NAME_LENGTH + 1)),
        ("summary", "s" * MAX_SUMMARY_LENGTH, "s" * (MAX_SUMMARY_LENGTH + 1)),
        (
            "key_arguments",
            [f"k{n}" for n in range(MAX_KEY_ARGUMENTS)],
            [f"k{n}" for n in range(MAX_KEY_ARGUMENTS + 1)],
        ),
    ],
)
def test_approval_request_limits_are_one(api_a, tenant_a, field, ok, bad):
    base = {"tool_name": "refund", "arguments": {}, "risk": "low"}
    version = _running_run(tenant_a, "run-bad")
    api_bad = _post(
        api_a, "/api/v1/runs/run-bad/approvals", {**base, "expected_version": version, field: bad}
    )
    _api_refuses(api_bad, field)
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: ApprovalStore(tenant_a, ACTOR).request(
                run_id="run-bad", expected_version=version, **{**base, field: bad}
            ),
            field,
        )
    version = _running_run(tenant_a, "run-ok-api")
    api_ok = _post(
        api_a, "/api/v1/runs/run-ok-api/approvals", {**base, "expected_version": version, field: ok}
    )
    assert api_ok.status_code == 201, api_ok.content
    version = _running_run(tenant_a, "run-ok-store")
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, ACTOR).request(
            run_id="run-ok-store", expected_version=version, **{**base, field: ok}
        )


# --- sessions_app.store ---------------------------------------------------------
def test_user_id_limit_is_one(api_a, make_token, tenant_a):
    ok, bad = "u" * MAX_USER_ID_LENGTH, "u" * (MAX_USER_ID_LENGTH + 1)
    assert _post(api_a, "/api/v1/sessions", {"user_id": ok}).status_code == 201
    api = _api_refuses(_post(api_a, "/api/v1/sessions", {"user_id": bad}), "user_id")
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ACTOR).create(user_id=ok)
        store = _store_refuses(lambda: SessionStore(tenant_a, ACTOR).create(user_id=bad), "user_id")
    assert api and store
    # An erasure names a session's user: the same rule (lifecycle_app takes it from sessions).
    admin = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, TokenRole.ADMIN)}"})
    assert _post(admin, "/api/v1/erasures", {"user_id": ok, "reason": "asked"}).status_code == 202
    _api_refuses(_post(admin, "/api/v1/erasures", {"user_id": bad, "reason": "asked"}), "user_id")
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: ErasureStore(tenant_a, ACTOR).request(user_id=bad, reason="asked"), "user_id"
        )


def test_close_reason_limit_is_one(api_a, tenant_a):
    with in_tenant(tenant_a):
        for name in ("api", "store"):
            SessionStore(tenant_a, ACTOR).create(session_id=f"sess-{name}", user_id="u")
    bad = "r" * (MAX_REASON_LENGTH + 1)
    _api_refuses(_post(api_a, "/api/v1/sessions/sess-api/close", {"reason": bad}), "reason")
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: SessionStore(tenant_a, ACTOR).close(session_id="sess-store", reason=bad),
            "reason",
        )
    ok = "r" * MAX_REASON_LENGTH
    assert _post(api_a, "/api/v1/sessions/sess-api/close", {"reason": ok}).status_code == 200
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ACTOR).close(session_id="sess-store", reason=ok)


# --- tasks_app.store ------------------------------------------------------------
def test_task_string_limits_are_one(api_a, tenant_a):
    ok, bad = "c" * MAX_CONSTRAINT_LENGTH, "c" * (MAX_CONSTRAINT_LENGTH + 1)
    key = field_path("constraints", 0)
    assert _post(api_a, "/api/v1/tasks", {"objective": "o", "constraints": [ok]}).status_code == 201
    _api_refuses(_post(api_a, "/api/v1/tasks", {"objective": "o", "constraints": [bad]}), key)
    with in_tenant(tenant_a):
        tasks = TaskStateStore(tenant_a, ACTOR)
        tasks.create(task_id="task-l", objective="o", constraints=[ok])
        _store_refuses(lambda: tasks.create(objective="o", constraints=[bad]), key)

    node_ok, node_bad = "n" * MAX_LIST_ITEM_LENGTH, "n" * (MAX_LIST_ITEM_LENGTH + 1)
    key = field_path("pending_nodes", 0)
    path = "/api/v1/tasks/task-l/state"
    saved = _post(api_a, path, {"expected_version": 1, "pending_nodes": [node_ok]}, "put")
    assert saved.status_code == 200, saved.content
    _api_refuses(
        _post(api_a, path, {"expected_version": 2, "pending_nodes": [node_bad]}, "put"), key
    )
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: tasks.save(task_id="task-l", expected_version=2, pending_nodes=[node_bad]), key
        )
        tasks.save(task_id="task-l", expected_version=2, pending_nodes=[node_ok])


# --- error keys: one format -------------------------------------------------------
def test_error_keys_are_field_paths_from_the_api_and_the_stores(api_a, tenant_a):
    """`error.message` is refused under one key, whether the serializer or the store refuses."""
    _running_run(tenant_a, "run-f")
    with in_tenant(tenant_a):
        effect, _ = EffectStore(tenant_a, ACTOR).record(
            run_id="run-f", idempotency_key="k", tool_name="t", request={}
        )
    path = f"/api/v1/effects/{effect.effect_id}/fail"
    key = field_path("error", "message")
    assert key == "error.message"
    _api_refuses(_post(api_a, path, {"error": {}}), key)  # the serializer's refusal
    _api_refuses(_post(api_a, path, {"error": {"message": "  "}}), key)  # the store's
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: EffectStore(tenant_a, ACTOR).fail(
                effect_id=effect.effect_id, error={"message": " "}
            ),
            key,
        )
    assert flatten({"items": [{}, {"role": ["bad"]}]}) == {"items[1].role": ["bad"]}
    assert field_path("items", 1, "role") == "items[1].role"


# --- runs_app.store: cost_used (DECIMAL(18, 6)) ----------------------------------------
def test_cost_places_rule_is_one(api_a, tenant_a):
    """Six decimal places are kept by both; a seventh, which the column would round, is
    refused by both, under `cost_used` with the store's words."""
    assert (COST_MAX_DIGITS, COST_DECIMAL_PLACES) == (18, 6)
    version = _running_run(tenant_a, "run-c")
    path = "/api/v1/runs/run-c/transition"
    six, seven = "0.123456", "0.1234567"
    ok = _post(api_a, path, {"expected_version": version, "cost_used": six})
    assert ok.status_code == 200, ok.content
    assert ok.json()["cost_used"] == six
    version = ok.json()["version"]
    api = _api_refuses(
        _post(api_a, path, {"expected_version": version, "cost_used": seven}), "cost_used"
    )
    with in_tenant(tenant_a):
        runs = RunStateStore(tenant_a, ACTOR)
        store = _store_refuses(
            lambda: runs.compare_and_set(
                run_id="run-c", expected_version=version, changes={"cost_used": seven}
            ),
            "cost_used",
        )
        assert api == store == [f"at most {COST_DECIMAL_PLACES} decimal places"]
        run = runs.compare_and_set(
            run_id="run-c", expected_version=version, changes={"cost_used": "1.654321"}
        )
        assert run.cost_used == Decimal("1.654321")
    # The column's whole digits, the same way: 10^12 is refused by both alike.
    too_big = str(10**12)
    api = _api_refuses(
        _post(api_a, path, {"expected_version": run.version, "cost_used": too_big}), "cost_used"
    )
    with in_tenant(tenant_a):
        store = _store_refuses(
            lambda: RunStateStore(tenant_a, ACTOR).compare_and_set(
                run_id="run-c", expected_version=run.version, changes={"cost_used": too_big}
            ),
            "cost_used",
        )
    assert api == store


# --- approvals_app.store: a decision's reason ------------------------------------------
def test_decision_reason_limit_is_one(make_token, tenant_a):
    operator = Client(
        headers={"Authorization": f"Bearer {make_token(tenant_a, TokenRole.OPERATOR)}"}
    )
    ids = {}
    for name in ("api", "store"):
        version = _running_run(tenant_a, f"run-d-{name}")
        with in_tenant(tenant_a):
            ids[name] = (
                ApprovalStore(tenant_a, ACTOR)
                .request(
                    run_id=f"run-d-{name}",
                    expected_version=version,
                    tool_name="refund",
                    arguments={},
                    risk="low",
                )
                .approval_id
            )
    bad = "r" * (MAX_DECISION_REASON_LENGTH + 1)
    path = f"/api/v1/approvals/{ids['api']}/decision"
    _api_refuses(_post(operator, path, {"decision": "reject", "reason": bad}), "reason")
    person = Actor.system("operator")
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: ApprovalStore(tenant_a, person).decide(
                approval_id=ids["store"], decision="reject", reason=bad
            ),
            "reason",
        )
    ok = "r" * MAX_DECISION_REASON_LENGTH
    decided = _post(operator, path, {"decision": "reject", "reason": ok})
    assert decided.status_code == 200, decided.content
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, person).decide(
            approval_id=ids["store"], decision="reject", reason=ok
        )


# --- a deletion's and an erasure's reason: the sessions' rule ---------------------------
def test_deletion_reason_is_the_session_reason(make_token, tenant_a):
    assert deletion.MAX_REASON_LENGTH is MAX_REASON_LENGTH
    admin = Client(headers={"Authorization": f"Bearer {make_token(tenant_a, TokenRole.ADMIN)}"})
    with in_tenant(tenant_a):
        sessions = SessionStore(tenant_a, ACTOR)
        sessions.create(session_id="sess-del", user_id="u")
        sessions.close(session_id="sess-del")
    bad = "r" * (MAX_REASON_LENGTH + 1)
    path = "/api/v1/sessions/sess-del/deletions"
    _api_refuses(_post(admin, path, {"reason": bad}), "reason")
    _api_refuses(_post(admin, "/api/v1/erasures", {"user_id": "u", "reason": bad}), "reason")
    with in_tenant(tenant_a):
        _store_refuses(
            lambda: deletion.DeletionStore(tenant_a, ACTOR).request(
                session_id="sess-del", reason=bad
            ),
            "reason",
        )
        _store_refuses(
            lambda: ErasureStore(tenant_a, ACTOR).request(user_id="u", reason=bad), "reason"
        )
    assert _post(admin, path, {"reason": "r" * MAX_REASON_LENGTH}).status_code == 202


def test_a_persons_reason_is_one_rule_in_every_store(tenant_a):
    """Sessions, deletions, runs, effects and the tenant's hold take a person's reason from
    stateroom.reasons; the run store refuses what the session store refuses, alike."""
    import effects_app.store
    import runs_app.store
    import sessions_app.store
    import tenancy_app.store
    from stateroom import reasons

    assert {
        sessions_app.store.MAX_REASON_LENGTH,
        deletion.MAX_REASON_LENGTH,
        effects_app.store.MAX_SETTLE_REASON_LENGTH,
        tenancy_app.store.MAX_HOLD_REASON_LENGTH,
    } == {reasons.MAX_REASON_LENGTH}
    assert sessions_app.store.check_reason is runs_app.store.check_reason is reasons.check_reason
    _running_run(tenant_a, "r-why")
    with in_tenant(tenant_a):
        runs = runs_app.store.RunStateStore(tenant_a, ACTOR)
        for bad, message in (
            (
                "r" * (reasons.MAX_REASON_LENGTH + 1),
                f"at most {reasons.MAX_REASON_LENGTH} characters",
            ),
            ("stop\x00now", "contains a NUL character"),
        ):
            assert _store_refuses(
                lambda bad=bad: runs.suspend(run_id="r-why", reason=bad), "reason"
            ) == [message]
        assert (
            runs.suspend(run_id="r-why", reason="r" * reasons.MAX_REASON_LENGTH).status
            == "suspended"
        )


# --- list filters and an effect's approval_id: the API's check is the only one ---------
def test_an_impossible_id_in_a_filter_finds_nothing_in_the_store(api_a, tenant_a):
    """Only the API checks these ids' length: a longer id than any row can hold finds no
    row in the store (an empty list, or 404 for an effect's approval), so one place suffices."""
    _running_run(tenant_a, "run-i")
    too_long = "i" * (MAX_PUBLIC_ID_LENGTH + 1)
    for path, param in [
        ("/api/v1/runs", "session_id"),
        ("/api/v1/runs", "task_id"),
        ("/api/v1/approvals", "run_id"),
        ("/api/v1/effects", "run_id"),
    ]:
        response = api_a.get(path, {param: too_long})
        assert response.status_code == 422, (path, param)
        assert param in response.json()["error"]["details"]
    with in_tenant(tenant_a):
        assert not RunStateStore(tenant_a, ACTOR).list_runs(session_id=too_long).exists()
        assert not ApprovalStore(tenant_a, ACTOR).list_approvals(run_id=too_long).exists()
        with pytest.raises(NotFound):
            EffectStore(tenant_a, ACTOR).record(
                run_id="run-i",
                idempotency_key="k",
                tool_name="t",
                request={},
                approval_id=too_long,
            )
    body = {"idempotency_key": "k", "tool_name": "t", "request": {}, "approval_id": too_long}
    _api_refuses(_post(api_a, "/api/v1/runs/run-i/effects", body), "approval_id")
