"""Fixtures of the LangGraph adapter tests: runtime processes (the live server is tests/runtime/conftest.py's)."""

from __future__ import annotations

import pytest

from tests.runtime.conftest import worker_runner


@pytest.fixture
def worker(server, refund_log):
    """Run `python -m tests.runtime.langgraph.worker ...` in a fresh process; (returncode, outcome)."""
    return worker_runner("tests.runtime.langgraph.worker", server, refund_log)
