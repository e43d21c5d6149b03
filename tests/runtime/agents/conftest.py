"""Fixtures of the Agents SDK adapter tests: runtime processes (the live server is tests/runtime/conftest.py's)."""

from __future__ import annotations

import pytest

from tests.runtime.conftest import worker_runner

from .worker import CLAIMED_EXIT


@pytest.fixture
def worker(server, refund_log):
    """Run `python -m tests.runtime.agents.worker ...` in a fresh process; (returncode, outcome)."""
    return worker_runner("tests.runtime.agents.worker", server, refund_log, (0, CLAIMED_EXIT))
