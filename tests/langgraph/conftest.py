"""Fixtures of the LangGraph adapter tests: the live server, tokens and clients."""

from __future__ import annotations

import pytest

from stateroom_client import StateroomClient
from tenancy_app.models import TokenRole
from tests.client.live import Server


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
