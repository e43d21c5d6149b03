"""bench.routing: asking approvals with no rules and with a rule to a group, on a small N."""

import pytest

from approvals_app.models import ApprovalRequest
from bench.routing import measure, render
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

pytestmark = pytest.mark.django_db


def test_the_routing_bench_times_both_sides_and_counts_one_notice_row_per_routed_request():
    result = measure(6, warmup=2)
    sides = {side["side"]: side for side in result["sides"]}
    assert set(sides) == {"no rules", "rule → group of 3"}
    for side in sides.values():
        assert side["count"] == 6 and side["p50_ms"] > 0 and side["p95_ms"] >= side["p50_ms"]
    assert sides["no rules"]["notice_rows"] == 0
    assert sides["rule → group of 3"]["notice_rows"] == 8  # warm-up included: one per request
    assert sides["rule → group of 3"]["notice_rows_per_request"] == 1
    assert result["p50_ratio"] == pytest.approx(
        sides["rule → group of 3"]["p50_ms"] / sides["no rules"]["p50_ms"], rel=0.01
    )
    routed = Tenant.objects.get(slug__startswith="bench-routed-")
    with in_tenant(routed):
        asked = list(ApprovalRequest.objects.values_list("assigned_group_ids", "route_rule__name"))
    assert len(asked) == 8 and {(len(g), name) for g, name in asked} == {(1, "everything")}
    table = "\n".join(render(result))
    assert "| no rules |" in table and "| rule → group of 3 |" in table
    assert ("met" in table) or ("MISSED" in table)
    assert render({}) == []
