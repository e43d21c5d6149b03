"""A run's trace id (from the runtime's W3C traceparent) and its usage reports (totals)."""

from decimal import Decimal

from stateroom.tracing import trace_id_from_header

from .conftest import make_run, reload
from .test_api import error_of, post

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
OTHER = "0af7651916cd43dd8448eb211c80319c"


def traceparent(trace_id: str, span: str = "00f067aa0ba902b7") -> str:
    return f"00-{trace_id}-{span}-01"


def test_the_traceparent_of_the_call_that_creates_a_run_is_kept(api_a, tenant_a):
    response = post(api_a, "/api/v1/runs", {"run_id": "r-1"}, HTTP_TRACEPARENT=traceparent(TRACE))
    assert response.status_code == 201
    assert response.json()["trace_id"] == TRACE
    # A later call of another trace does not replace it: the run links the trace of its start.
    moved = post(
        api_a,
        "/api/v1/runs/r-1/transition",
        {"expected_version": 1, "status": "running"},
        HTTP_TRACEPARENT=traceparent(OTHER),
    )
    assert (moved.status_code, moved.json()["trace_id"]) == (200, TRACE)
    assert reload(tenant_a, "r-1")["trace_id"] == TRACE
    assert api_a.get("/api/v1/runs/r-1").json()["trace_id"] == TRACE


def test_a_run_made_without_one_keeps_the_first_transition_s(api_a, tenant_a):
    make_run(tenant_a, run_id="r-1")  # version 1, no trace
    assert reload(tenant_a, "r-1")["trace_id"] is None
    moved = post(
        api_a,
        "/api/v1/runs/r-1/transition",
        {"expected_version": 1, "status": "running"},
        HTTP_TRACEPARENT=traceparent(OTHER),
    )
    assert moved.json()["trace_id"] == OTHER
    # A refused transition writes no trace id either.
    refused = post(
        api_a,
        "/api/v1/runs/r-1/transition",
        {"expected_version": 1, "status": "running"},
        HTTP_TRACEPARENT=traceparent(TRACE),
    )
    assert error_of(refused)[:2] == (409, "version_conflict")
    assert reload(tenant_a, "r-1")["trace_id"] == OTHER


def test_a_malformed_traceparent_is_ignored_not_refused(api_a, tenant_a):
    for n, header in enumerate(
        [
            "garbage",
            traceparent("0" * 32),  # an all-zero trace id is invalid
            f"00-{TRACE}-0000000000000000-01",  # so is an all-zero parent id
            f"ff-{TRACE}-00f067aa0ba902b7-01",  # version ff is forbidden
            f"00-{TRACE.upper()}-00f067aa0ba902b7-01",  # upper case is not W3C
        ]
    ):
        response = post(api_a, "/api/v1/runs", {"run_id": f"r-{n}"}, HTTP_TRACEPARENT=header)
        assert (response.status_code, response.json()["trace_id"]) == (201, None), header


def test_trace_id_parsing_follows_the_w3c_propagator():
    assert trace_id_from_header(traceparent(TRACE)) == TRACE
    assert trace_id_from_header(None) is None
    assert trace_id_from_header("") is None
    assert trace_id_from_header(f"00-{TRACE[:-1]}-00f067aa0ba902b7-01") is None


def test_usage_is_reported_as_totals_so_a_repeat_counts_once(api_a, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")  # version 2
    report = {"token_used": 1200, "cost_used": "0.0125", "model": "gpt-5-mini"}
    first = post(api_a, "/api/v1/runs/r-1/transition", {"expected_version": 2, **report})
    assert first.status_code == 200
    # The same report again (a retry after a lost answer, a replayed step): the totals stay.
    again = post(api_a, "/api/v1/runs/r-1/transition", {"expected_version": 3, **report})
    assert again.status_code == 200
    # The same report at the old version (a blind retry): refused, nothing counted.
    stale = post(api_a, "/api/v1/runs/r-1/transition", {"expected_version": 2, **report})
    assert error_of(stale)[:2] == (409, "version_conflict")
    row = reload(tenant_a, "r-1")
    assert (row["token_used"], row["cost_used"], row["model"]) == (
        1200,
        Decimal("0.0125"),
        "gpt-5-mini",
    )
    body = api_a.get("/api/v1/runs/r-1").json()
    assert (body["token_used"], body["cost_used"], body["model"]) == (
        1200,
        "0.012500",
        "gpt-5-mini",
    )


def test_bad_usage_is_422_and_changes_nothing(api_a, api_b, tenant_a):
    make_run(tenant_a, "running", run_id="r-1")
    before = reload(tenant_a, "r-1")
    url = "/api/v1/runs/r-1/transition"
    for body, field in [
        ({"token_used": -1}, "token_used"),
        ({"token_used": "12"}, "token_used"),
        ({"cost_used": "-1"}, "cost_used"),
        ({"cost_used": "NaN"}, "cost_used"),
        ({"cost_used": "1e20"}, "cost_used"),
        ({"model": "m" * 201}, "model"),
        ({"model": ["gpt"]}, "model"),
    ]:
        response = post(api_a, url, {"expected_version": 2, **body})
        status, code, details = error_of(response)
        assert (status, code, list(details)) == (422, "validation_error", [field]), body
    # Another tenant's run is 404 whatever the usage.
    assert error_of(post(api_b, url, {"expected_version": 2, "token_used": 5}))[:2] == (
        404,
        "not_found",
    )
    assert reload(tenant_a, "r-1") == before
