"""Fixtures of the Agents SDK adapter tests: the live server and runtime processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stateroom_client import StateroomClient
from tenancy_app.models import TokenRole
from tests.client.live import Server

from .payments import REFUND_LOG
from .worker import CLAIMED_EXIT

ROOT = Path(__file__).resolve().parents[2]


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
    monkeypatch.setenv(REFUND_LOG, path)  # for tools run in this process too
    return path


@pytest.fixture
def worker(server, refund_log):
    """Run `python -m tests.agents.worker ...` in a fresh process; (returncode, outcome)."""

    def run(*args: str) -> tuple[int, dict | None]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.agents.worker",
                *args,
                "--url",
                server.url,
                "--token",
                server.token,
            ],
            cwd=ROOT,
            env={**os.environ, REFUND_LOG: refund_log},
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = done.stdout.strip().splitlines()
        if done.returncode in (0, CLAIMED_EXIT):
            return done.returncode, json.loads(lines[-1])
        if done.returncode > 0:
            raise AssertionError(f"worker failed ({done.returncode}):\n{done.stderr}")
        return done.returncode, None

    return run
