"""The one live-server fixture of the runtime-side tests (agents, langgraph, client; browser tests that drive an agent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stateroom_client import StateroomClient
from tenancy_app.models import TokenRole
from tests.runtime.live import Server

ROOT = Path(__file__).resolve().parents[2]
REFUND_LOG = "STATEROOM_TEST_REFUND_LOG"  # the variable tests/runtime/agents/payments.py and langgraph/refunds.py read


@pytest.fixture
def server(live_server, tenant_a, tenant_b, make_token) -> Server:
    return Server(
        url=live_server.url,
        tenant=tenant_a,
        token=make_token(tenant_a),
        operator_token=make_token(tenant_a, role=TokenRole.OPERATOR, name="ops"),
        other_token=make_token(tenant_b),
    )


@pytest.fixture
def client(server):
    with StateroomClient(server.url, server.token) as c:
        yield c


@pytest.fixture
def operator(server):
    with StateroomClient(server.url, server.operator_token) as c:
        yield c


@pytest.fixture
def refund_log(tmp_path, monkeypatch) -> str:
    path = str(tmp_path / "refunds.log")
    monkeypatch.setenv(REFUND_LOG, path)  # for tools and graphs run in this process too
    return path


def worker_runner(
    module: str, server: Server, refund_log: str, done_codes: tuple[int, ...] = (0,)
) -> Callable[..., tuple[int, dict | None]]:
    """Run `python -m <module> ...` in a fresh process; (returncode, outcome).

    A return code in `done_codes` prints the outcome as its last line; another
    positive one fails the test; a negative one (killed) has no outcome.
    """

    def run(*args: str) -> tuple[int, dict | None]:
        done = subprocess.run(
            [sys.executable, "-m", module, *args, "--url", server.url, "--token", server.token],
            cwd=ROOT,
            env={**os.environ, REFUND_LOG: refund_log},
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode in done_codes:
            return done.returncode, json.loads(lines[-1])
        if done.returncode > 0:
            raise AssertionError(f"worker failed ({done.returncode}):\n{done.stderr}")
        return done.returncode, None

    return run
