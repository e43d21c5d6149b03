"""The tenant home page: what needs a person and what is going on, as counts linking to lists."""

import re

import pytest

from tests.conftest import login
from tests.console.conftest import build_world
from tests.console.fixtures import make_pending, queries


def counts(page: str) -> dict[str, int]:
    return {
        name: int(value) for name, value in re.findall(r'data-testid="home-([a-z-]+)">(\d+)<', page)
    }


def test_home_counts_this_tenant_only(tenant_a, tenant_b, support_a):
    build_world(tenant_a)
    build_world(tenant_b)
    make_pending(tenant_b, run_id="b-run-2", session_id="b-sess-2")
    page = login(support_a).get("/t/acme/").content.decode()
    assert counts(page) == {
        "approvals": 1,
        "suspended": 0,
        "effects-to-settle": 1,
        "active-sessions": 1,
        "running-runs": 0,
        "active-tasks": 1,
    }
    assert 'href="/t/acme/runs/?status=waiting_approval">1 waiting for approval</a>' in page
    assert 'href="/t/acme/sessions/?status=active"' in page


def test_home_of_an_empty_tenant_shows_zeros(tenant_a, support_a):
    page = login(support_a).get("/t/acme/").content.decode()
    assert set(counts(page).values()) == {0}
    assert '">0</strong> pending approvals</a>' in page


@pytest.mark.parametrize("rows", [1, 12])
def test_home_query_count(tenant_a, support_a, rows, django_assert_num_queries):
    for n in range(rows):
        make_pending(tenant_a, run_id=f"run-{n}", session_id=f"sess-{n}", effects=1)
    client = login(support_a)
    # Session, user, membership, tenant transaction, layout (badge count, tenant
    # switcher), then four counts: sessions, runs and tasks by status, unknown effects.
    with django_assert_num_queries(queries(11)):
        page = client.get("/t/acme/").content.decode()
    assert counts(page)["approvals"] == rows
