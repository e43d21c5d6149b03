"""What routing adds to asking for an approval (issue 34), section `routing`.

Two fresh tenants of the bench database: one with no routing rule (an
approval asks nobody in particular: today's request plus the one query that
finds no rule), one whose only rule routes every call to a group of 3
members (the request also records the assignees and writes the `asked`
notice's outbox row in its transaction). `count` approvals are asked on each
through `ApprovalStore.request` inside `in_tenant(tenant, atomic=False)` (as
the API's hot path calls it), the two sides interleaved call by call
(`bench.timing.measure_interleaved`); each call asks on a run made running
beforehand, outside the timing. Reported: p50/p95 of each side, the ratio of
the routed p50 to the plain one (target ≤ 1.2x), and the notice outbox rows
written per request on each side, counted in the table (target: 1 routed, 0
plain: one row per notice, whatever the number of recipients).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

TARGET_RATIO = 1.2
RECIPIENTS = 3


def _tenant(slug: str):
    from tenancy_app.models import Tenant

    return Tenant.objects.create(slug=slug, name=slug)


def _runs(tenant, count: int, prefix: str) -> list:
    """`count` running runs, made outside the timing."""
    from runs_app.store import RunStateStore
    from stateroom.actor import Actor
    from tenancy_app.scoping import in_tenant

    store = RunStateStore(tenant, Actor.system("bench"))
    runs = []
    with in_tenant(tenant):
        for i in range(count):
            run = store.create(run_id=f"{prefix}-{i}")
            runs.append(
                store.compare_and_set(
                    run_id=run.run_id, expected_version=run.version, changes={"status": "running"}
                )
            )
    return runs


def _route_to_a_group(tenant, slug: str) -> list[int]:
    """Three members in a group, and one rule asking it of every call: their user ids."""
    from django.contrib.auth import get_user_model

    from approvals_app.routing import RoutingRules
    from stateroom.actor import Actor
    from tenancy_app.groups import GroupStore
    from tenancy_app.models import Membership, Role
    from tenancy_app.scoping import in_tenant

    users = [
        get_user_model().objects.create_user(username=f"{slug}-{n}", password=None)
        for n in range(RECIPIENTS)
    ]
    with in_tenant(tenant):
        for user in users:
            Membership.objects.create(user=user, tenant=tenant, role=Role.OPERATOR)
        actor = Actor.system("bench")
        group = GroupStore(tenant, actor).save_group(
            name="Payments", user_ids=[u.pk for u in users]
        )
        RoutingRules(tenant, actor).save_rule(name="everything", group_ids=[group.pk])
    return [u.pk for u in users]


def _asker(tenant, runs: list) -> Callable[[int], object]:
    from approvals_app.store import ApprovalStore
    from stateroom.actor import Actor
    from tenancy_app.scoping import in_tenant

    store = ApprovalStore(tenant, Actor.system("bench"))
    arguments = {"to": "acct-9", "amount": 1200, "currency": "EUR"}
    queue = list(runs)

    def ask(_i: int) -> object:
        run = queue.pop(0)
        with in_tenant(tenant, atomic=False):
            return store.request(
                run_id=run.run_id,
                expected_version=run.version,
                tool_name="payments.refund",
                arguments=arguments,
                risk="high",
            )

    return ask


def _notice_rows(tenant) -> int:
    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from outbox_app.models import OutboxMessage
    from tenancy_app.scoping import in_tenant

    with in_tenant(tenant):
        return OutboxMessage.objects.filter(tenant=tenant, task=APPROVAL_NOTICE_TASK).count()


def measure(count: int, *, warmup: int = 10) -> dict:
    """Ask `count` approvals (plus `warmup`) on each side; the numbers of both and their ratio."""
    from .timing import measure_interleaved

    tag = uuid.uuid4().hex[:8]
    plain, routed = _tenant(f"bench-plain-{tag}"), _tenant(f"bench-routed-{tag}")
    _route_to_a_group(routed, f"bench-{tag}")
    total = count + warmup
    sides = {
        "no rules": _asker(plain, _runs(plain, total, "plain")),
        f"rule → group of {RECIPIENTS}": _asker(routed, _runs(routed, total, "routed")),
    }
    samples = measure_interleaved(sides, iterations=count, warmup=warmup, max_seconds=600.0)
    asked = {name: sample.count + warmup for name, sample in samples.items()}
    rows = {"no rules": _notice_rows(plain), f"rule → group of {RECIPIENTS}": _notice_rows(routed)}
    plain_s, routed_s = samples.values()
    ratio = routed_s.p50_ms / plain_s.p50_ms if plain_s.p50_ms else 0.0
    per_request = {name: rows[name] / asked[name] for name in sides}
    return {
        "count": count,
        "sides": [
            {
                "side": name,
                **samples[name].summary(),
                "notice_rows": rows[name],
                "notice_rows_per_request": round(per_request[name], 3),
            }
            for name in sides
        ],
        "p50_ratio": round(ratio, 3),
        "target_ratio": TARGET_RATIO,
        "met": ratio <= TARGET_RATIO
        and per_request
        == {
            "no rules": 0.0,
            f"rule → group of {RECIPIENTS}": 1.0,
        },
    }


def run(url: str, scale, cat, log) -> dict:
    """The bench section: 1,000 approvals a side at the default scale (`op_iterations`)."""
    count = max(50, scale.op_iterations)
    log(f"routing: asking {count} approvals with no rules and with a rule to a group")
    return measure(count)


def render(result: dict) -> list[str]:
    """The section's Markdown table (bench/report.py)."""
    if not result or "sides" not in result:
        return []
    lines = [
        f"**Asking an approval, routed or not** ({result['count']} a side, "
        "`ApprovalStore.request`, interleaved):",
        "",
        "| side | p50 ms | p95 ms | notice outbox rows per request |",
        "|---|---:|---:|---:|",
    ]
    for side in result["sides"]:
        lines.append(
            f"| {side['side']} | {side['p50_ms']:.2f} | {side['p95_ms']:.2f} |"
            f" {side['notice_rows_per_request']:g} |"
        )
    verdict = "met" if result["met"] else "**MISSED**"
    lines += [
        "",
        f"Routed p50 ÷ plain p50: {result['p50_ratio']:.2f}x "
        f"(target ≤ {result['target_ratio']}x, one row per notice): {verdict}.",
        "",
    ]
    return lines
