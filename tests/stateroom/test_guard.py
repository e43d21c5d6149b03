"""A guard rides with the connection's next tenant setting (stateroom.sql.guard_tenant_statements).

The guard is tenancy_app's `tenancy_token_live`, as a request with a known
token sends it: refusing when its token is unknown. What it carries is checked
first, in the same round trip: a refusal leaves nothing written.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessions_app.models import SessionItem
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.sql import GuardRefused, guard_tenant_statements
from tenancy_app.auth import LIVE
from tenancy_app.scoping import in_tenant

pytestmark = [pytest.mark.django_db(transaction=True)]

ACTOR = Actor.system("test")
ITEM = {"role": "user", "item_type": "message", "payload": {"n": 1}}


@pytest.fixture
def store(tenant_a) -> SessionStore:
    with in_tenant(tenant_a):
        SessionStore(tenant_a, ACTOR).create(session_id="s-1", user_id="alice")
    return SessionStore(tenant_a, ACTOR)


def refusing(tenant):
    return guard_tenant_statements(LIVE, [0, tenant.pk, "0:(0,0)"])  # no token 0


def items(tenant) -> int:
    with in_tenant(tenant):
        return SessionItem.objects.count()


def test_a_refusing_guard_stops_the_pipelined_statement_it_rides_with(store, tenant_a):
    with in_tenant(tenant_a, atomic=False), refusing(tenant_a) as pending:
        with CaptureQueriesContext(connection) as queries, pytest.raises(GuardRefused):
            store.append_items(session_id="s-1", items=[ITEM])
        assert pending()  # not spent: the caller decides what a refusal means
    assert len(queries) == 1  # one message: the setting, the guard, the append
    assert items(tenant_a) == 0


def test_a_refusing_guard_stops_the_transaction_it_opens(store, tenant_a):
    with refusing(tenant_a), pytest.raises(GuardRefused):
        with in_tenant(tenant_a):
            store.append_items(session_id="s-1", items=[ITEM])
    assert items(tenant_a) == 0
    assert not connection.in_atomic_block


def test_a_passing_guard_is_spent_by_the_first_tenant_statement(store, tenant_a, make_token):
    from tenancy_app.auth import bearer

    raw = make_token(tenant_a)
    bearer(f"Bearer {raw}")  # read: the process knows it now
    check = bearer(f"Bearer {raw}").check
    assert check is not None
    with in_tenant(tenant_a, atomic=False), guard_tenant_statements(*check) as pending:
        with CaptureQueriesContext(connection) as queries:
            store.append_items(session_id="s-1", items=[ITEM])
            store.append_items(session_id="s-1", items=[ITEM])
        assert not pending()
    sql = [q["sql"] for q in queries]
    assert "tenancy_token_live(" in sql[0]
    assert "tenancy_token_live(" not in sql[1]
    assert items(tenant_a) == 2


def test_no_guard_outlives_its_block(store, tenant_a):
    with refusing(tenant_a):
        pass
    with in_tenant(tenant_a, atomic=False):
        store.append_items(session_id="s-1", items=[ITEM])
    assert items(tenant_a) == 1
