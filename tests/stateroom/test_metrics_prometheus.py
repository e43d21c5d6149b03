"""Debian's Prometheus scrapes /metrics from the web server with 2 workers (issue 35).

A scripted workload goes through the API (a session, runs, approvals asked and
decided, a 404); Prometheus, started here on loopback with a 1 s scrape interval
and the bearer token, must then answer through its query API with the counts the
workload made: requests by route and status added up across both workers,
approvals ended by outcome and risk, decision latencies by risk, the backlog.
One long-poll holds a worker while the rest is served, so both workers count.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from stateroom_client import StateroomClient
from tenancy_app.models import TokenRole
from tests.conftest import require_infrastructure
from tests.infra import free_port, subprocess_env, web_server

TOKEN = "metrics-test-token"
PROMETHEUS = os.environ.get("STATEROOM_PROMETHEUS") or shutil.which("prometheus")

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def prometheus(target: str) -> Iterator[str]:
    """Prometheus on a free loopback port, scraping `target` every second; yields its URL."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="prometheus-") as home:
        config = Path(home) / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
            "scrape_configs:\n  - job_name: stateroom\n    metrics_path: /metrics\n"
            f"    authorization:\n      type: Bearer\n      credentials: {TOKEN}\n"
            f"    static_configs:\n      - targets: ['{target}']\n"
        )
        log = (Path(home) / "prometheus.log").open("w")
        server = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={home}/data",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until(lambda: _ready(base), what="Prometheus ready", log=Path(log.name))
            yield base
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=10)
            log.close()


def _ready(base: str) -> bool:
    try:
        return httpx.get(base + "/-/ready", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def wait_until(check, *, what: str, timeout: float = 45.0, log: Path | None = None):
    """Poll `check` until it returns something truthy, with a deadline (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            detail = log.read_text()[-2000:] if log is not None and log.exists() else ""
            pytest.fail(f"timed out waiting for {what}\n{detail}")
        time.sleep(0.2)


def query(base: str, promql: str) -> dict[tuple[tuple[str, str], ...], float]:
    """An instant query: each series' labels (sorted) to its value."""
    answer = httpx.get(base + "/api/v1/query", params={"query": promql}, timeout=5).json()
    assert answer["status"] == "success", answer
    return {
        tuple(sorted(row["metric"].items())): float(row["value"][1])
        for row in answer["data"]["result"]
    }


def by(label_names: tuple[str, ...], series: dict) -> dict[tuple[str, ...], float]:
    return {
        tuple(dict(labels).get(name, "") for name in label_names): value
        for labels, value in series.items()
    }


def workload(base: str, runtime_token: str, operator_token: str) -> None:
    """The scripted calls, a long-poll among them (it holds the worker that takes it: calls
    on that worker's connections wait for it, those on the other worker's do not)."""
    with (
        StateroomClient(base, runtime_token) as client,
        StateroomClient(base, operator_token) as operator,
    ):
        client.create_session(user_id="u-1", session_id="s-1")
        asked = {}
        for run_id, risk in (("r-1", "high"), ("r-2", "low"), ("r-3", "medium")):
            run = client.create_run(run_id=run_id)
            run = client.transition_run(run_id, expected_version=run.version, status="running")
            asked[risk] = client.request_approval(
                run_id,
                expected_version=run.version,
                tool_name="issue_refund",
                arguments={"order_id": run_id},
                risk=risk,
            ).approval_id
        with long_poll(base, runtime_token, asked["medium"]) as answer:
            operator.decide_approval(asked["high"], decision="approve", reason="ok")
            operator.decide_approval(asked["low"], decision="reject", reason="no")
            missing = httpx.get(
                base + "/api/v1/sessions/no-such-session", headers=_auth(runtime_token)
            )
            assert missing.status_code == 404
        assert answer[0].startswith(b"HTTP/1.1 200")


@contextmanager
def long_poll(base: str, token: str, approval_id: str) -> Iterator[list[bytes]]:
    """`GET /api/v1/approvals/{id}?wait=3`, on the wire before the block runs; its answer
    (the status line) is read after it."""
    host, port = base.removeprefix("http://").split(":")
    answer: list[bytes] = []
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            f"GET /api/v1/approvals/{approval_id}?wait=3 HTTP/1.1\r\nHost: {host}\r\n"
            f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n".encode()
        )
        yield answer
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        answer.append(received.split(b"\r\n", 1)[0])


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


# What the workload asked, by (route, method, status): the URL patterns' names.
EXPECTED_REQUESTS = {
    ("api-sessions", "POST", "201"): 1,
    ("api-runs", "POST", "201"): 3,
    ("api-run-transition", "POST", "200"): 3,
    ("api-run-approvals", "POST", "201"): 3,
    ("api-approval", "GET", "200"): 1,
    ("api-approval-decision", "POST", "200"): 2,
    ("api-session", "GET", "404"): 1,
}
# The start-up check (tests.infra.web_server polls /healthz) and the scrapes vary in number.
VARYING = {"healthz", "metrics"}


def seen(prom: str) -> dict[str, dict]:
    """What Prometheus answers now, series by series."""
    requests = by(
        ("route", "method", "status"),
        query(prom, "sum by (route, method, status) (stateroom_http_requests_total)"),
    )
    return {
        "requests": {k: v for k, v in requests.items() if k[0] not in VARYING},
        "varying": {k: v for k, v in requests.items() if k[0] in VARYING},
        "ended": by(
            ("outcome", "risk"),
            query(prom, "sum by (outcome, risk) (stateroom_approvals_ended_total)"),
        ),
        "decided": by(
            ("risk",), query(prom, "sum by (risk) (stateroom_approval_decision_seconds_count)")
        ),
        "pending": by(("risk",), query(prom, "sum by (risk) (stateroom_approvals_pending)")),
        "connections": by((), query(prom, "sum(stateroom_db_connections_open)")),
    }


def test_prometheus_scrapes_both_workers_and_sees_the_workload(tenant_a, make_token, tmp_path):
    require_infrastructure(
        bool(PROMETHEUS and os.access(PROMETHEUS, os.X_OK)),
        "Debian's prometheus is missing (apt-get install prometheus, or STATEROOM_PROMETHEUS)",
    )
    runtime_token = make_token(tenant_a)
    operator_token = make_token(tenant_a, role=TokenRole.OPERATOR, name="ops")
    multiproc = tmp_path / "multiproc"
    env = subprocess_env(
        CELERY_TASK_ALWAYS_EAGER="1",
        PROMETHEUS_MULTIPROC_DIR=str(multiproc),
        STATEROOM_METRICS_TOKEN=TOKEN,
    )
    with web_server(env, workers=2) as base:
        assert httpx.get(base + "/metrics").status_code == 401
        workload(base, runtime_token, operator_token)
        # Both workers counted requests and hold a database connection (stateroom.serve
        # emptied the directory first). Which worker takes a new connection is the kernel's
        # choice: scrapes by hand, each on a connection of its own (each reads the database),
        # until each worker has served one.
        for _ in range(50):
            scraped = httpx.get(base + "/metrics", headers=_auth(TOKEN))
            assert scraped.status_code == 200
            if "stateroom_db_connections_open 2.0" in scraped.text:
                break
        assert len(list(multiproc.glob("counter_*.db"))) == 2
        with prometheus(base.removeprefix("http://")) as prom:
            wait_until(lambda: query(prom, 'up{job="stateroom"} == 1'), what="a first scrape")
            now = wait_until(
                lambda: (lambda s: s if s["requests"] == EXPECTED_REQUESTS else None)(seen(prom)),
                what="the workload's requests in Prometheus",
            )
    assert now["requests"] == EXPECTED_REQUESTS
    assert now["varying"][("healthz", "GET", "200")] >= 1
    assert now["varying"][("metrics", "GET", "401")] == 1  # no token: refused
    assert now["ended"] == {("approved", "high"): 1, ("rejected", "low"): 1}
    assert now["decided"] == {("high",): 1, ("low",): 1}
    assert now["pending"] == {("low",): 0, ("medium",): 1, ("high",): 0, ("critical",): 0}
    assert now["connections"] == {(): 2}  # each worker keeps its connection (DB_CONN_MAX_AGE)
