"""The approval long-poll answers as soon as a person decides (two requests at once: PostgreSQL)."""

from __future__ import annotations

import threading
import time

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
