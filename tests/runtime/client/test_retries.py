"""Retries: only calls that cannot do anything twice are repeated, and only on 429/5xx/connect errors.

The faults come from a real HTTP proxy in front of the live server (`FlakyProxy`):
it answers 503/429 without forwarding, or forwards and then loses the answer
(the server did the work, the client never heard), which is the case that
makes blind retries of writes dangerous.
"""

from __future__ import annotations

import socket

import pytest

from stateroom_client import (
    AppendResult,
    RateLimited,
    ServerError,
    StateroomClient,
    TransportError,
)

from ..live import CountingTransport

ITEM = {"role": "user", "item_type": "message", "payload": {"text": "hi"}}


@pytest.fixture
def flaky(server, proxy):
    with StateroomClient(proxy.url, server.token, backoff=0.01) as c:
        yield c


def test_reads_are_retried_on_5xx_and_429_up_to_the_limit(flaky, client, proxy):
    client.create_session(user_id="u-1", session_id="s-1")
    proxy.fail(2, 503, method="GET", path="/sessions/s-1")
    assert flaky.get_session("s-1").session_id == "s-1"
    assert proxy.requests("GET", "/sessions/s-1") == [503, 503, 200]

    proxy.log.clear()
    proxy.fail(10, 502, method="GET", path="/sessions/s-1")
    with pytest.raises(ServerError) as failed:
        flaky.get_session("s-1")
    assert (failed.value.status, failed.value.code) == (502, "http_502")
    assert proxy.requests("GET", "/sessions/s-1") == [502, 502, 502, 502]  # 1 + 3 retries

    proxy.log.clear()
    proxy.faults.clear()
    proxy.fail(1, 429, method="GET", path="/sessions/s-1", headers={"Retry-After": "0"})
    assert flaky.get_session("s-1").status == "active"
    assert proxy.requests("GET", "/sessions/s-1") == [429, 200]

    proxy.fail(10, 429, method="GET", path="/sessions/s-1", headers={"Retry-After": "0"})
    with pytest.raises(RateLimited) as limited:
        flaky.get_session("s-1")
    assert (limited.value.status, limited.value.code, limited.value.retry_after) == (
        429,
        "http_429",
        0.0,
    )


def test_keyed_appends_are_retried_but_plain_writes_and_cas_never(flaky, client, proxy):
    client.create_session(user_id="u-1", session_id="s-1")
    # The first attempt appends but its answer is lost; the retry replays it.
    proxy.fail(1, 502, method="POST", path="/sessions/s-1/items", forward=True)
    result = flaky.append_items("s-1", [ITEM], idempotency_key="turn-1")
    assert result == AppendResult(first_seq=1, last_seq=1, created=False)
    assert proxy.requests("POST", "/sessions/s-1/items") == [502, 200]
    assert [i.seq for i in client.get_items("s-1")] == [1]

    # Without a key the client cannot know: not retried (a retry would append twice).
    proxy.log.clear()
    proxy.fail(1, 502, method="POST", path="/sessions/s-1/items", forward=True)
    with pytest.raises(ServerError):
        flaky.append_items("s-1", [ITEM])
    assert proxy.requests("POST", "/sessions/s-1/items") == [502]
    assert [i.seq for i in client.get_items("s-1")] == [1, 2]

    # A CAS transition is never retried: the write happened, and a blind
    # retry would have reported our own write as a version conflict.
    run = client.create_run(run_id="r-1")
    proxy.fail(1, 503, method="POST", path="/runs/r-1/transition", forward=True)
    with pytest.raises(ServerError):
        flaky.transition_run("r-1", expected_version=run.version, status="running")
    assert proxy.requests("POST", "/runs/r-1/transition") == [503]
    assert (client.get_run("r-1").status, client.get_run("r-1").version) == ("running", 2)

    # Nor is a create.
    proxy.fail(1, 503, method="POST", path="/tasks")
    with pytest.raises(ServerError):
        flaky.create_task(task_id="t-1", objective="x")
    assert proxy.requests("POST", "/tasks") == [503]


def test_record_and_commit_effect_are_retried_under_their_key(flaky, client, proxy):
    run = client.create_run(run_id="r-1")
    client.transition_run("r-1", expected_version=run.version, status="running")
    proxy.fail(1, 500, method="POST", path="/runs/r-1/effects", forward=True)
    effect = flaky.record_effect("r-1", idempotency_key="r-1:c1", tool_name="t", request={"a": 1})
    assert (effect.created, effect.status) == (False, "started")  # found the first attempt's
    assert proxy.requests("POST", "/runs/r-1/effects") == [500, 200]
    assert len(client.list_run_effects("r-1")) == 1

    proxy.fail(1, 504, method="POST", path="/commit", forward=True)
    committed = flaky.commit_effect(effect.effect_id, result={"ok": True})
    assert committed.status == "committed"
    assert proxy.requests("POST", "/commit") == [504, 200]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connect_errors_retry_idempotent_calls_only():
    url = f"http://127.0.0.1:{_closed_port()}"  # nothing listens there
    reads = CountingTransport()
    with StateroomClient(url, "sr_token", transport=reads, retries=2, backoff=0.01) as c:
        with pytest.raises(TransportError) as unreachable:
            c.get_run("r-1")
    assert (unreachable.value.code, unreachable.value.status, reads.attempts) == (
        "connection_error",
        None,
        3,
    )

    writes = CountingTransport()
    with StateroomClient(url, "sr_token", transport=writes, retries=2, backoff=0.01) as c:
        with pytest.raises(TransportError):
            c.transition_run("r-1", expected_version=1, status="running")
    assert writes.attempts == 1


def test_the_servers_rate_limit_is_a_typed_error_and_writes_are_not_retried(server, settings):
    settings.STATEROOM_API_RATE = "2/minute"  # the live server reads it per request
    attempts = CountingTransport()
    with StateroomClient(server.url, server.token, transport=attempts, backoff=0.01) as c:
        c.create_task(task_id="t-1", objective="one")
        c.create_task(task_id="t-2", objective="two")
        with pytest.raises(RateLimited) as limited:
            c.create_task(task_id="t-3", objective="three")
    assert (limited.value.status, limited.value.code) == (429, "rate_limited")
    assert 0 < limited.value.retry_after <= 60
    assert attempts.attempts == 3  # the refused create was not repeated
