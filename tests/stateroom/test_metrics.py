"""/metrics (stateroom.metrics, stateroom.metrics_http): the token, bounded labels, the
scrape-time collector against the rows, approvals counted on commit, Celery results,
and the multiprocess files added up across processes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.urls import resolve
from django.utils import timezone
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from approvals_app.models import ApprovalRequest, Risk
from outbox_app.models import OutboxMessage
from outbox_app.relay import enqueue
from stateroom import metrics
from stateroom.actor import Actor
from stateroom.celery import app as celery_app
from tenancy_app.scoping import in_tenant
from tests.approvals.conftest import approval_store, make_approval
from tests.runs.conftest import Clock

TOKEN = "s3cret-metrics-token"
ROOT = Path(__file__).resolve().parents[2]


def scrape(client: Client | None = None) -> dict[str, list]:
    """/metrics as Prometheus reads it: family name to its samples."""
    response = (client or Client()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        family.name: family.samples
        for family in text_string_to_metric_families(response.content.decode())
    }


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


# --- the token ---------------------------------------------------------------------------
@override_settings(STATEROOM_METRICS_TOKEN=None)
def test_without_a_token_configured_there_is_no_such_page(db):
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404


@override_settings(STATEROOM_METRICS_TOKEN=TOKEN)
@pytest.mark.parametrize(
    "header", [None, "Bearer", "Bearer wrong-token", f"Basic {TOKEN}", f"Bearer {TOKEN}x"]
)
def test_without_the_token_it_is_401(db, header):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = Client().get("/metrics", **extra)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"stateroom_" not in response.content


@override_settings(STATEROOM_METRICS_TOKEN=TOKEN)
def test_with_the_token_it_serves_the_metrics(db):
    families = scrape()
    for name in (
        "stateroom_http_requests",
        "stateroom_http_request_duration_seconds",
        "stateroom_approvals_pending",
        "stateroom_outbox_waiting",
        "stateroom_db_connections_open",
    ):
        assert name in families


# --- bounded labels ----------------------------------------------------------------------
@override_settings(STATEROOM_METRICS_TOKEN=TOKEN)
def test_labels_carry_no_ids_paths_or_tenants(tenant_a, api_a, operator_a):
    ids = ["s-7f3a9c", "r-unique-42", "apr_deadbeef0001"]
    for one in ids:
        api_a.get(f"/api/v1/sessions/{one}")
        api_a.get(f"/api/v1/runs/{one}")
        Client().get(f"/nowhere/{one}")
    console = Client()
    console.force_login(operator_a)
    console.get("/t/acme/approvals/apr_deadbeef0001/")
    families = scrape()
    labels = {
        (key, val)
        for name, samples in families.items()
        if name.startswith("stateroom_")
        for sample in samples
        for key, val in sample.labels.items()
    }
    text = " ".join(f"{k}={v}" for k, v in labels)
    for needle in [*ids, "acme", "/"]:
        assert needle not in text, needle
    routes = {val for key, val in labels if key == "route"}
    assert "unmatched" in routes and "api-session" in routes
    for route in routes - {"unmatched"}:
        assert re.fullmatch(r"[\w.:-]+", route), route
    assert resolve("/api/v1/sessions/x").view_name == "api-session"
    assert {key for key, _ in labels} <= {
        "route", "method", "status", "outcome", "risk", "tenant", "task", "state", "le"
    }  # fmt: skip


@override_settings(STATEROOM_METRICS_TOKEN=TOKEN, STATEROOM_METRICS_TENANT_LABELS=True)
def test_tenant_labels_only_when_configured(tenant_a, tenant_b, operator_a):
    make_approval(tenant_a, approval_id="apr-a", risk="high")
    make_approval(tenant_b, approval_id="apr-b", risk="high")
    pending = {
        (s.labels["risk"], s.labels["tenant"]): s.value
        for s in scrape()["stateroom_approvals_pending"]
    }
    assert pending == {("high", "acme"): 1, ("high", "globex"): 1}


# --- the collector against the rows ----------------------------------------------------
@override_settings(STATEROOM_METRICS_TOKEN=TOKEN)
def test_the_backlog_and_outbox_gauges_equal_the_rows(tenant_a, tenant_b, operator_a):
    clock = Clock()
    clock.current = timezone.now() - timedelta(hours=2)
    long_ago = clock.current
    make_approval(tenant_a, run_id="r-1", approval_id="a-old", risk="high", clock=clock)
    make_approval(  # expired an hour ago, not swept: not pending any more
        tenant_a,
        run_id="r-2",
        approval_id="a-gone",
        risk="high",
        clock=clock,
        expires_at=long_ago + timedelta(hours=1),
    )
    clock.current = timezone.now()
    make_approval(tenant_a, run_id="r-3", approval_id="a-new", risk="low")
    make_approval(tenant_b, run_id="r-1", approval_id="b-1", risk="high")
    make_approval(tenant_b, run_id="r-2", approval_id="b-2", risk="critical")
    with in_tenant(tenant_b):
        approval_store(tenant_b, Actor.for_user(operator_a)).expire(approval_id="b-2")
    for tenant, count in ((tenant_a, 2), (tenant_b, 1)):
        with in_tenant(tenant):
            for n in range(count):
                enqueue(tenant=tenant, task="outbox_app.tasks.noop", args=[n], right_away=False)

    before = timezone.now()
    families = scrape()
    after = timezone.now()

    expected_pending: dict[str, int] = dict.fromkeys(Risk.values, 0)
    oldest: dict[str, object] = {}
    waiting, oldest_job = 0, None
    for tenant in (tenant_a, tenant_b):
        with in_tenant(tenant):
            for row in ApprovalRequest.objects.filter(tenant=tenant, status="pending"):
                if row.expires_at is None or row.expires_at > before:
                    expected_pending[row.risk] += 1
                    oldest[row.risk] = min(oldest.get(row.risk, row.created_at), row.created_at)
            for job in OutboxMessage.objects.filter(tenant=tenant, sent_at__isnull=True):
                waiting += 1
                oldest_job = min(oldest_job or job.created_at, job.created_at)
    assert expected_pending == {"low": 1, "medium": 0, "high": 2, "critical": 0}
    pending = {s.labels["risk"]: s.value for s in families["stateroom_approvals_pending"]}
    assert pending == expected_pending
    ages = {
        s.labels["risk"]: s.value
        for s in families["stateroom_approvals_pending_oldest_age_seconds"]
    }
    for risk in Risk.values:
        if risk not in oldest:
            assert ages[risk] == 0
            continue
        assert (before - oldest[risk]).total_seconds() <= ages[risk]
        assert ages[risk] <= (after - oldest[risk]).total_seconds()
    assert ages["high"] > 7000  # the one asked two hours ago
    [depth] = families["stateroom_outbox_waiting"]
    assert depth.value == waiting == 3
    [age] = families["stateroom_outbox_waiting_oldest_age_seconds"]
    assert (
        (before - oldest_job).total_seconds() <= age.value <= (after - oldest_job).total_seconds()
    )


def test_the_definer_functions_are_security_definer_owned_by_the_tables_owner(db):
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.proname, p.prosecdef, pg_get_userbyid(p.proowner) FROM pg_proc p"
            " WHERE p.proname IN ('approvals_metrics_backlog', 'outbox_metrics_depth')"
            " ORDER BY p.proname"
        )
        functions = cursor.fetchall()
        cursor.execute(
            "SELECT tableowner FROM pg_tables WHERE tablename = 'approvals_app_approvalrequest'"
        )
        owner = cursor.fetchone()[0]
        # The app role itself still sees no approval outside a tenant.
        cursor.execute("SELECT count(*) FROM approvals_app_approvalrequest")
        assert cursor.fetchone() == (0,)
    assert functions == [
        ("approvals_metrics_backlog", True, owner),
        ("outbox_metrics_depth", True, owner),
    ]


# --- approvals counted when they commit -------------------------------------------------
def test_an_approval_end_is_counted_once_it_commits(
    tenant_a, operator_a, django_capture_on_commit_callbacks
):
    clock = Clock()
    ended = {"outcome": "approved", "risk": "high", "tenant": ""}
    before = value("stateroom_approvals_ended_total", **ended)
    latency = value("stateroom_approval_decision_seconds_count", risk="high", tenant="")
    under_60 = value(
        "stateroom_approval_decision_seconds_bucket", risk="high", tenant="", le="60.0"
    )
    make_approval(tenant_a, approval_id="apr-1", risk="high", clock=clock)
    clock.advance(45)
    store = approval_store(tenant_a, Actor.for_user(operator_a), clock=clock)
    with django_capture_on_commit_callbacks(execute=False) as rolled_back, in_tenant(tenant_a):
        store.decide(approval_id="apr-1", decision="approve", reason="within policy")
    # The test's transaction never committed: callbacks captured, none run, nothing counted.
    assert value("stateroom_approvals_ended_total", **ended) == before
    with django_capture_on_commit_callbacks(execute=True):
        for callback in rolled_back:
            callback()
    assert value("stateroom_approvals_ended_total", **ended) == before + 1
    assert value("stateroom_approval_decision_seconds_count", risk="high", tenant="") == latency + 1
    assert (
        value("stateroom_approval_decision_seconds_bucket", risk="high", tenant="", le="60.0")
        == under_60 + 1
    )


def test_expiry_cancel_and_void_are_counted_and_not_as_decisions(
    tenant_a, operator_a, django_capture_on_commit_callbacks
):
    def count(outcome: str) -> float:
        return value("stateroom_approvals_ended_total", outcome=outcome, risk="low", tenant="")

    decisions = value("stateroom_approval_decision_seconds_count", risk="low", tenant="")
    was = {o: count(o) for o in ("expired", "cancelled", "voided")}
    for n in range(3):
        make_approval(tenant_a, run_id=f"r-{n}", approval_id=f"apr-{n}", risk="low")
    store = approval_store(tenant_a)
    with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
        store.expire(approval_id="apr-0")
        store.cancel(approval_id="apr-1", reason="not needed")
        store.void(approval_id="apr-2", reason_code="tool_changed", reason="the tool changed")
    assert {o: count(o) - was[o] for o in was} == {"expired": 1, "cancelled": 1, "voided": 1}
    assert value("stateroom_approval_decision_seconds_count", risk="low", tenant="") == decisions


# --- Celery results ----------------------------------------------------------------------
@celery_app.task(name="tests.metrics.flaky", bind=True, max_retries=1)
def flaky(self, fail: bool):
    if fail:
        raise ValueError("boom")
    return "ok"


def test_celery_results_are_counted_by_task_and_state():
    def count(state: str) -> float:
        return value("stateroom_celery_tasks_total", task="tests.metrics.flaky", state=state)

    was = {s: count(s) for s in ("success", "failure")}
    assert flaky.apply(args=[False]).successful()
    assert flaky.apply(args=[True], throw=False).failed()
    assert {s: count(s) - was[s] for s in was} == {"success": 1, "failure": 1}


# --- several processes ------------------------------------------------------------------
WORKER = """
import os, sys
os.environ["DJANGO_SETTINGS_MODULE"] = "stateroom.test_settings"
import django
django.setup()
from stateroom import metrics
for _ in range(int(sys.argv[1])):
    metrics.count_request("api-session", "GET", 200, 0.01)
metrics.DB_CONNECTIONS.set(1)
print(os.getpid(), flush=True)
sys.stdin.read()  # lives until the test closes its stdin
"""


def test_multiprocess_values_are_added_up_and_a_dead_workers_gauge_dropped(tmp_path, db):
    """Two processes count into one PROMETHEUS_MULTIPROC_DIR, which the first one makes; the
    collector adds them up; once one has exited, a scrape drops its live gauge (whatever
    ran it: no server hook) and keeps its counts."""
    directory = tmp_path / "multiproc"  # not there yet
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=str(directory))
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(n)],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in (3, 4)
    ]
    try:
        pids = [int(worker.stdout.readline()) for worker in workers]

        def scraped() -> dict[str, float]:
            os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(directory)
            try:
                text = generate_latest(metrics.registry()).decode()
            finally:
                del os.environ["PROMETHEUS_MULTIPROC_DIR"]
            return {
                s.name + str(sorted(s.labels.items())): s.value
                for family in text_string_to_metric_families(text)
                for s in family.samples
            }

        key = "stateroom_http_requests_total" + str(
            sorted({"route": "api-session", "method": "GET", "status": "200"}.items())
        )
        first = scraped()
        assert first[key] == 7
        assert first["stateroom_db_connections_open[]"] == 2
        workers[0].stdin.close()
        workers[0].wait(timeout=30)
        after = scraped()
        assert after["stateroom_db_connections_open[]"] == 1  # the live one's
        assert after[key] == 7  # counters keep a dead worker's counts
        assert not list(directory.glob(f"gauge_live*_{pids[0]}.db"))
        assert list(directory.glob(f"gauge_live*_{pids[1]}.db"))
    finally:
        for worker in workers:
            if worker.stdin and not worker.stdin.closed:
                worker.stdin.close()
            worker.wait(timeout=30)
    assert metrics.multiprocess_dir() is None
