"""The approval long-poll answers as soon as a person decides (two requests at once: PostgreSQL)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

from stateroom_client import StateroomClient


def test_long_poll_returns_as_soon_as_the_approval_is_decided(server, client):
    run = client.create_run(run_id="r-1")
    run = client.transition_run("r-1", expected_version=run.version, status="running")
    approval = client.request_approval(
        "r-1", expected_version=run.version, tool_name="refund", arguments={}, risk="low"
    )

    def decide() -> None:
        time.sleep(1.0)
        with StateroomClient(server.url, server.operator_token) as operator:
            operator.decide_approval(approval.approval_id, decision="approve", reason="fine")

    decider = threading.Thread(target=decide)
    started = time.monotonic()
    decider.start()
    decided = client.get_approval(approval.approval_id, wait=20)
    elapsed = time.monotonic() - started
    decider.join()
    assert (decided.status, decided.decided_by) == ("approved", "token:ops")
    assert 0.9 <= elapsed < 5


def test_wait_for_decision_returns_the_expiry_at_expires_at_without_a_sweep(server, client):
    run = client.create_run(run_id="r-2")
    run = client.transition_run("r-2", expected_version=run.version, status="running")
    expires_at = datetime.now(UTC) + timedelta(seconds=1.5)
    approval = client.request_approval(
        "r-2",
        expected_version=run.version,
        tool_name="refund",
        arguments={},
        risk="low",
        expires_at=expires_at,
    )
    started = time.monotonic()
    expired = client.wait_for_decision(approval.approval_id, timeout=20)
    elapsed = time.monotonic() - started
    assert (expired.status, expired.is_pending, expired.decided_at) == (
        "expired",
        False,
        expired.expires_at,
    )
    assert 1.0 <= elapsed < 10
    assert [a.approval_id for a in client.iter_approvals(status="expired")] == [
        approval.approval_id
    ]
    assert list(client.iter_approvals(status="pending")) == []
