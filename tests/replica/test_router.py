"""The replica router and the read-your-writes pin, in process (the real replica: test_replica.py)."""

from __future__ import annotations

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from stateroom import replica
from stateroom.replica import PIN_COOKIE, ReplicaPinMiddleware, ReplicaRouter


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock(1_000_000.0)
    monkeypatch.setattr(replica, "clock", clock)
    return clock


def request_after(response: HttpResponse, path: str = "/t/acme/audit/"):
    request = RequestFactory().get(path)
    request.COOKIES = {name: morsel.value for name, morsel in response.cookies.items()}
    return request


def served(method: str, path: str, monkeypatch, *, configured: bool = True) -> HttpResponse:
    monkeypatch.setattr(replica, "configured", lambda: configured)
    request = getattr(RequestFactory(), method.lower())(path)
    return ReplicaPinMiddleware(lambda request: HttpResponse())(request)


def test_a_console_write_pins_the_browser_to_the_primary_for_the_configured_seconds(
    clock, monkeypatch, settings
):
    settings.DB_REPLICA_PIN_SECONDS = 5.0
    response = served("POST", "/t/acme/sessions/s1/hold", monkeypatch)
    assert PIN_COOKIE in response.cookies
    assert response.cookies[PIN_COOKIE]["httponly"] is True
    request = request_after(response)
    assert replica.pinned(request)
    clock.now += 4.9
    assert replica.pinned(request)
    clock.now += 0.2
    assert not replica.pinned(request)


def test_reads_api_calls_and_a_missing_replica_set_no_pin(clock, monkeypatch):
    for method in ("GET", "HEAD", "OPTIONS"):
        assert PIN_COOKIE not in served(method, "/t/acme/audit/", monkeypatch).cookies
    assert PIN_COOKIE not in served("POST", "/api/v1/sessions", monkeypatch).cookies
    no_replica = served("POST", "/t/acme/sessions/s1/hold", monkeypatch, configured=False)
    assert PIN_COOKIE not in no_replica.cookies


def test_a_tampered_pin_is_ignored(clock):
    request = RequestFactory().get("/t/acme/audit/")
    request.COOKIES = {PIN_COOKIE: repr(clock() + 60)}  # unsigned
    assert not replica.pinned(request)


def test_reads_go_to_the_replica_only_inside_replica_reads_and_writes_never(monkeypatch):
    from audit_app.models import AuditEvent

    router = ReplicaRouter()
    assert router.db_for_read(AuditEvent) == "default"
    token = replica._on_replica.set(True)
    try:
        assert router.db_for_read(AuditEvent) == "replica"
        assert router.db_for_write(AuditEvent) == "default"
        assert router.db_for_write(AuditEvent, instance=AuditEvent()) == "default"
    finally:
        replica._on_replica.reset(token)
    assert router.allow_migrate("replica", "audit_app") is False
    assert router.allow_migrate("default", "audit_app") is True


def test_without_a_replica_no_view_reads_elsewhere(rf, tenant_a):
    request = rf.get("/t/acme/audit/")
    request.tenant = tenant_a
    assert not replica.may_read_replica(request)
    with replica.replica_reads(request) as on:
        assert on is False
        assert replica._on_replica.get() is False
