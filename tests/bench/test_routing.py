"""bench.routing: asking approvals with no rules and with a rule to a group, through the
store and through the API's WSGI handler, on a small N."""

import pytest

from approvals_app.models import ApprovalRequest
from bench.routing import measure, render
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

# Committed: the WSGI handler's request signals close a connection held in a transaction.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def not_eager(monkeypatch):
    """As the bench runs (`CELERY_TASK_ALWAYS_EAGER=0`): notices wait in the outbox."""
    from stateroom.celery import app

    monkeypatch.setattr(app.conf, "task_always_eager", False)


SIDES = {
    "no rules, store",
    "rule → group of 3, store",
    "no rules, API",
    "rule → group of 3, API",
}


def test_the_routing_bench_times_each_side_and_counts_one_notice_row_per_routed_request():
    result = measure(6, warmup=2)
    sides = {side["side"]: side for side in result["sides"]}
    assert set(sides) == SIDES
    for name, side in sides.items():
        assert side["count"] == 6 and side["p50_ms"] > 0 and side["p95_ms"] >= side["p50_ms"]
        routed = name.startswith("rule")
        assert side["notice_rows"] == (8 if routed else 0)  # warm-up included: one per request
        assert side["notice_rows_per_request"] == (1 if routed else 0)
    for how, key in (("store", "p50_ratio"), ("API", "p50_ratio_api")):
        routed, plain = sides[f"rule → group of 3, {how}"], sides[f"no rules, {how}"]
        assert result[key] == pytest.approx(routed["p50_ms"] / plain["p50_ms"], rel=0.01)
    for how in ("store", "api"):
        routed = Tenant.objects.get(slug__startswith=f"bench-routed-{how}-")
        with in_tenant(routed):
            asked = list(
                ApprovalRequest.objects.values_list("assigned_group_ids", "route_rule__name")
            )
        assert len(asked) == 8 and {(len(g), name) for g, name in asked} == {(1, "everything")}
    table = "\n".join(render(result))
    for name in SIDES:
        assert f"| {name} |" in table
    assert ("met" in table) or ("MISSED" in table)
    assert render({}) == []
