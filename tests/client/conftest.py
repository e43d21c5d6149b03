"""Fixtures of the client tests: the live server, tokens, clients, a flaky proxy."""

from __future__ import annotations

import pytest

from stateroom_client import StateroomClient
from tenancy_app.models import TokenRole

from .live import FlakyProxy, Server


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
    with StateroomClient(server.url, server.token, backoff=0.01) as c:
        yield c


@pytest.fixture
def operator(server):
    with StateroomClient(server.url, server.operator_token) as c:
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
