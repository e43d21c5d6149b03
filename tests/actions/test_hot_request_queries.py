"""SQL per hot runtime request, pinned (bench/api.py `request_anatomy` times the same GET)."""

from django.db import connection
from django.test.utils import CaptureQueriesContext

from ..runs.conftest import make_run
from ..runs.test_api import post
from ..sessions.conftest import make_session

# One token lookup, BEGIN, the tenant setting, a savepoint per part and the step's own,
# the claim, the event numbers and rows, the compare-and-set, COMMIT.
STEP_STATEMENTS = 14


def _sql(send) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        response = send()
    assert response.status_code in (200, 201), response.content
    return [q["sql"] for q in queries]


def test_reading_50_items_is_the_token_and_one_message(transactional_db, api_a, tenant_a):
    make_session(tenant_a, "s-1")
    items = [{"role": "user", "item_type": "message", "payload": {"n": n}} for n in range(60)]
    assert post(api_a, "/api/v1/sessions/s-1/items", {"items": items}).status_code == 201
    read = lambda: api_a.get("/api/v1/sessions/s-1/items?limit=50")  # noqa: E731
    read()  # the token's first use is recorded once; measure afterwards
    sql = _sql(read)
    assert len(sql) == 2, sql
    assert "tenancy_token_by_hash" in sql[0]
    assert "set_config('app.tenant_id'" in sql[1]  # with the read, one round trip


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
    assert len(separate) == 21
    assert len(step) < len(separate)
