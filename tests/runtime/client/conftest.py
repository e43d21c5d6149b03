"""Fixtures of the client tests: a quick-retrying client, another tenant's, a flaky proxy (the live server is tests/runtime/conftest.py's)."""

from __future__ import annotations

import pytest

from stateroom_client import StateroomClient

from ..live import FlakyProxy


@pytest.fixture
def client(server):
    with StateroomClient(server.url, server.token, backoff=0.01) as c:
        yield c


@pytest.fixture
def other(server):
    """A runtime of another tenant."""
    with StateroomClient(server.url, server.other_token) as c:
        yield c


@pytest.fixture
def proxy(server):
    flaky = FlakyProxy(server.url)
    yield flaky
    flaky.close()
