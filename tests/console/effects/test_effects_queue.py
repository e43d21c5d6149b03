"""The effects queue: every effect a person must settle, across runs; the home page links to it."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from effects_app.models import ExternalEffect
from effects_app.store import EffectStore
from tenancy_app.scoping import in_tenant
from tests.actions.test_run_control import make_run
from tests.conftest import login
from tests.console.conftest import RUNTIME, csrf_client, layout_queries


def record(tenant, run_id: str, key: str, *, status: str = "started", age_minutes: int = 0):
    clock = lambda: timezone.now() - timedelta(minutes=age_minutes)  # noqa: E731
    with in_tenant(tenant):
        store = EffectStore(tenant, RUNTIME, clock=clock)
        effect, _ = store.record(run_id=run_id, idempotency_key=key, tool_name="refund", request={})
        if status == "unknown":
            store.mark_unknown(effect_id=effect.effect_id, reason="crash")
        elif status == "committed":
            store.commit(effect_id=effect.effect_id, result={})
    return effect.effect_id


def queue_ids(body: str) -> list[str]:
    return re.findall(r'data-testid="queue-row" id="queue-([^"]+)"', body)


@pytest.fixture
def ledger(tenant_a):
    """Across two runs: one unknown, one started 30 minutes ago, one started just now,
    one committed long ago."""
    make_run(tenant_a, run_id="r-1")
    make_run(tenant_a, run_id="r-2")
    return {
        "unknown": record(tenant_a, "r-1", "k-unknown", status="unknown"),
        "stuck": record(tenant_a, "r-2", "k-stuck", age_minutes=30),
        "fresh": record(tenant_a, "r-2", "k-fresh"),
        "done": record(tenant_a, "r-1", "k-done", status="committed", age_minutes=60),
    }


def test_queue_lists_unknown_and_stuck_effects_across_runs(ledger, support_a):
    body = login(support_a).get("/t/acme/effects/").content.decode()
    assert queue_ids(body) == [ledger["stuck"], ledger["unknown"]]  # newest first
    assert "Settle…" not in body  # support reads; settling is for operators


def test_home_count_links_to_the_queue_and_matches_it(ledger, support_a):
    page = login(support_a).get("/t/acme/").content.decode()
    assert re.search(
        r'<a href="/t/acme/effects/"><strong data-testid="home-effects-to-settle">2</strong>', page
    )


def test_operator_settles_from_the_queue_and_comes_back_to_it(ledger, tenant_a, operator_a):
    client = login(operator_a)
    body = client.get("/t/acme/effects/").content.decode()
    assert f'data-testid="settle-{ledger["stuck"]}"' in body
    form = client.get(f"/t/acme/effects/{ledger['stuck']}/settle?back=queue").content.decode()
    assert 'name="back" value="queue"' in form
    response = client.post(
        f"/t/acme/effects/{ledger['stuck']}/settle",
        {"outcome": "failed", "reason": "provider has no charge", "back": "queue"},
    )
    assert response["Location"] == "/t/acme/effects/"
    assert queue_ids(client.get("/t/acme/effects/").content.decode()) == [ledger["unknown"]]
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.get(effect_id=ledger["stuck"]).status == "failed"


def test_settle_from_the_queue_needs_csrf(ledger, tenant_a, operator_a):
    response = csrf_client(operator_a).post(
        f"/t/acme/effects/{ledger['unknown']}/settle",
        {"outcome": "committed", "reason": "x", "back": "queue"},
    )
    assert response.status_code == 403
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.get(effect_id=ledger["unknown"]).status == "unknown"


def test_queue_is_tenant_scoped(ledger, admin_b):
    body = login(admin_b).get("/t/globex/effects/").content.decode()
    assert queue_ids(body) == []
    assert login(admin_b).get(f"/t/globex/effects/{ledger['unknown']}/settle").status_code == 404


def test_queue_pages_by_keyset(tenant_a, support_a):
    make_run(tenant_a, run_id="r-1")
    ids = [record(tenant_a, "r-1", f"k-{n}", status="unknown") for n in range(51)]
    client = login(support_a)
    body = client.get("/t/acme/effects/").content.decode()
    assert queue_ids(body) == ids[:0:-1]  # the newest 50
    next_url = re.search(r'href="([^"]+)"[^>]*data-testid="next-page"', body).group(1)
    assert queue_ids(client.get(next_url.replace("&amp;", "&")).content.decode()) == ids[:1]


@pytest.mark.parametrize("rows", [1, 12])
def test_queue_query_count(tenant_a, support_a, rows, django_assert_num_queries):
    make_run(tenant_a, run_id="r-1")
    for n in range(rows):
        record(tenant_a, "r-1", f"k-{n}", status="unknown")
    client = login(support_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # effects with runs
        body = client.get("/t/acme/effects/").content.decode()
    assert len(queue_ids(body)) == rows


def test_queue_get_changes_nothing(ledger, tenant_a, operator_a):
    login(operator_a).get(f"/t/acme/effects/{ledger['unknown']}/settle?outcome=committed&reason=x")
    with in_tenant(tenant_a):
        assert ExternalEffect.objects.get(effect_id=ledger["unknown"]).status == "unknown"
