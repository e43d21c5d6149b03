"""SQL per hot runtime request, pinned (bench/api.py `request_anatomy` times the same GET)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from ..runs.conftest import make_run
from ..runs.test_api import post
from ..sessions.conftest import make_session

# BEGIN, the tenant setting (with the token's check), a savepoint per part and the step's
# own, the claim, the event numbers and rows, the compare-and-set, COMMIT.
STEP_STATEMENTS = 13


def _sql(send) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = send()
    assert response.status_code in (200, 201), response.content
    return [q["sql"] for q in queries]


def _one_message_with_the_tokens_check(sql: list[str]) -> None:
    """One round trip: the tenant setting, the check of the process's copy of the token
    (tenancy_app.auth) and the statement, pipelined."""
    assert len(sql) == 1, sql
    assert sql[0].startswith("SELECT set_config('app.tenant_id'"), sql
    assert "SELECT tenancy_token_live(" in sql[0], sql


def test_reading_50_items_is_one_message(transactional_db, api_a, tenant_a):
    make_session(tenant_a, "s-1")
    items = [{"role": "user", "item_type": "message", "payload": {"n": n}} for n in range(60)]
    assert post(api_a, "/api/v1/sessions/s-1/items", {"items": items}).status_code == 201
    read = lambda: api_a.get("/api/v1/sessions/s-1/items?limit=50")  # noqa: E731
    read()  # the token's first use is recorded once; measure afterwards
    _one_message_with_the_tokens_check(_sql(read))


def test_a_token_the_process_has_not_seen_is_read_first(transactional_db, make_token, tenant_a):
    from django.test import Client

    make_session(tenant_a, "s-1")
    raw = make_token(tenant_a)
    client = Client(headers={"Authorization": f"Bearer {raw}"})
    sql = _sql(lambda: client.get("/api/v1/sessions/s-1/items?limit=50"))
    assert "tenancy_token_by_hash" in sql[0], sql
    assert "tenancy_token_live" not in " ".join(sql), sql  # read now: nothing to check


def test_a_step_costs_fewer_statements_than_its_three_calls(transactional_db, api_a, tenant_a):
    make_run(tenant_a, "created", run_id="r-1")
    make_run(tenant_a, "created", run_id="r-2")
    api_a.get("/api/v1/runs/r-1")  # the token's first use is recorded once
    event = [{"type": "agent.started", "payload": None}]
    separate = (
        _sql(lambda: post(api_a, "/api/v1/runs/r-2/claim", {"worker": "w", "expected_version": 1}))
        + _sql(lambda: post(api_a, "/api/v1/runs/r-2/events", {"events": event, "worker": "w"}))
        + _sql(
            lambda: post(
                api_a,
                "/api/v1/runs/r-2/transition",
                {"expected_version": 2, "status": "running", "worker": "w"},
            )
        )
    )
    step = _sql(
        lambda: post(
            api_a,
            "/api/v1/runs/r-1/step",
            {
                "expected_version": 1,
                "worker": "w",
                "claim": {},
                "events": event,
                "transition": {"status": "running"},
            },
        )
    )
    assert len(step) == STEP_STATEMENTS, step
    assert len(separate) == 18
    assert len(step) < len(separate)


def test_the_savers_put_write_and_read_are_each_one_message(transactional_db, api_a, tenant_a):
    """StateroomSaver's hot calls run with no request transaction (non_atomic_tenant_view):
    the tenant setting and the statement are one message, not BEGIN, the setting, the
    statement and COMMIT (and the token, known to the process, no lookup of its own)."""
    url = "/api/v1/langgraph"
    first = {
        "v": 1,
        "id": "c1",
        "ts": "2026-12-07T10:00:00+00:00",
        "channel_versions": {"m": 1},
        "versions_seen": {},
    }
    blob = {"channel": "m", "version": 1, "type": "json", "value": ["hi"]}
    # A new thread's first put also makes its task, once: the put finds no task, the task
    # is looked up (a finished one would be 409), made, and the put runs again; each one
    # message, with no transaction of its own (the token already known to the process).
    assert api_a.get("/api/v1/me").status_code == 200
    made = _sql(
        lambda: post(api_a, f"{url}/checkpoints", {"thread_id": "t 1", "checkpoint": first})
    )
    assert len(made) == 4, made
    assert [sql.startswith("SELECT set_config('app.tenant_id'") for sql in made] == [True] * 4
    assert "INSERT INTO tasks_app_task" in made[2], made
    second = {**first, "id": "c2", "channel_versions": {"m": 2}}
    calls = {
        "put": lambda: post(
            api_a,
            f"{url}/checkpoints",
            {
                "thread_id": "t 1",
                "checkpoint": second,
                "parent_checkpoint_id": "c1",
                "blobs": [{**blob, "version": 2}],
            },
        ),
        "put_writes": lambda: post(
            api_a,
            f"{url}/writes",
            {
                "thread_id": "t 1",
                "checkpoint_id": "c2",
                "graph_task_id": "task-1",
                "writes": [{"idx": 0, "channel": "m", "type": "json", "value": "x"}],
            },
        ),
        "get_tuple": lambda: api_a.get(f"{url}/checkpoints?thread_id=t%201&checkpoint_ns=&limit=1"),
    }
    for send in calls.values():
        _one_message_with_the_tokens_check(_sql(send))
    latest = api_a.get(f"{url}/checkpoints?thread_id=t%201&checkpoint_ns=&limit=1").json()
    assert [row["checkpoint_id"] for row in latest["results"]] == ["c2"]
    assert [w["task_id"] for w in latest["results"][0]["pending_writes"]] == ["task-1"]


def test_an_unknown_thread_is_still_404_from_a_route_without_a_transaction(
    transactional_db, api_a, api_b, tenant_a
):
    url = "/api/v1/langgraph/checkpoints?thread_id=nobody&limit=1"
    for client in (api_a, api_b):
        response = client.get(url)
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
