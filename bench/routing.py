"""What routing adds to asking for an approval (issue 34), section `routing`.

Two fresh tenants of the bench database: one with no routing rule (an
approval asks nobody in particular: today's request plus the one query that
finds no rule), one whose only rule routes every call to a group of 3
members (the request also records the assignees and writes the `asked`
notice's outbox row in its transaction). `count` approvals are asked on each
through `ApprovalStore.request` inside `in_tenant(tenant, atomic=False)` (as
the API's hot path calls it), the two sides interleaved call by call
(`bench.timing.measure_interleaved`); each call asks on a run made running
beforehand, outside the timing. The same is then asked, on runs of its own,
through the HTTP API: `POST /api/v1/runs/{run_id}/approvals` with a runtime
token, through Django's WSGI handler as the web server calls it (all middleware,
DRF, the token's lookup; no network). All four sides are interleaved.
Reported: p50/p95 of each side, the ratio of the routed p50 to the plain one
through the store and through the API (target ≤ 1.2x: issue 34 states it for
the POST), and the notice outbox rows written per request on each side,
counted in the table (target: 1 routed, 0 plain: one row per notice, whatever
the number of recipients). An approval's notice is left to the relay
(`enqueue(..., right_away=False)`): the request publishes nothing.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable

TARGET_RATIO = 1.2
RECIPIENTS = 3
PLAIN, ROUTED = "no rules", f"rule → group of {RECIPIENTS}"
SHORT = {PLAIN: "plain", ROUTED: "routed"}
STORE, API = "store", "API"
ARGUMENTS = {"to": "acct-9", "amount": 1200, "currency": "EUR"}


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
    """Three members (with email addresses) in a group, and one rule asking it of every call:
    their user ids."""
    from django.contrib.auth import get_user_model

    from approvals_app.routing import RoutingRules
    from stateroom.actor import Actor
    from tenancy_app.groups import GroupStore
    from tenancy_app.models import Membership, Role
    from tenancy_app.scoping import in_tenant

    users = [
        get_user_model().objects.create_user(
            username=f"{slug}-{n}", email=f"{slug}-{n}@example.test", password=None
        )
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
    arguments = ARGUMENTS
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


def _token(tenant) -> str:
    from stateroom.actor import Actor
    from tenancy_app.scoping import in_tenant
    from tenancy_app.store import TenancyStore

    with in_tenant(tenant):
        _, raw = TenancyStore(tenant, Actor.system("bench")).create_token(name="bench-routing")
    return raw


def _poster(tenant, runs: list) -> Callable[[int], object]:
    """POST each run's approval through Django's WSGI handler, as the web server calls it."""
    from django.core.handlers.wsgi import WSGIHandler

    handler, token, queue = WSGIHandler(), _token(tenant), list(runs)

    def ask(_i: int) -> object:
        run = queue.pop(0)
        body = json.dumps(
            {
                "expected_version": run.version,
                "tool_name": "payments.refund",
                "arguments": ARGUMENTS,
                "risk": "high",
            }
        ).encode()
        return _wsgi_post(handler, f"/api/v1/runs/{run.run_id}/approvals", body, token)

    return ask


def _wsgi_post(handler, path: str, body: bytes, token: str) -> int:
    """POST `body` to `path` through the WSGI handler; raises unless it answers 201."""
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SCRIPT_NAME": "",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "8000",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "127.0.0.1:8000",
        "HTTP_AUTHORIZATION": f"Bearer {token}",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": io.StringIO(),
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    statuses: list[str] = []
    response = handler(environ, lambda status, headers, exc_info=None: statuses.append(status))
    content = b"".join(response)
    response.close()
    if not statuses[0].startswith("201"):
        raise RuntimeError(f"POST {path} through WSGI answered {statuses[0]}: {content[:300]!r}")
    return 201


def _notice_rows(tenant) -> int:
    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from outbox_app.models import OutboxMessage
    from tenancy_app.scoping import in_tenant

    with in_tenant(tenant):
        return OutboxMessage.objects.filter(tenant=tenant, task=APPROVAL_NOTICE_TASK).count()


def measure(count: int, *, warmup: int = 10) -> dict:
    """Ask `count` approvals (plus `warmup`) on each side, through the store and the API;
    the numbers of each side and the routed ÷ plain ratios."""
    from .timing import measure_interleaved

    tag = uuid.uuid4().hex[:8]
    tenants = {
        (how, side): _tenant(f"bench-{SHORT[side]}-{how.lower()}-{tag}")
        for how in (STORE, API)
        for side in (PLAIN, ROUTED)
    }
    for (how, side), tenant in tenants.items():
        if side == ROUTED:
            _route_to_a_group(tenant, f"bench-{how.lower()}-{tag}")
    total = count + warmup
    sides = {
        f"{side}, {how}": (_asker if how == STORE else _poster)(
            tenant, _runs(tenant, total, f"{how.lower()}-{SHORT[side]}")
        )
        for (how, side), tenant in tenants.items()
    }
    samples = measure_interleaved(sides, iterations=count, warmup=warmup, max_seconds=900.0)
    rows = {f"{side}, {how}": _notice_rows(t) for (how, side), t in tenants.items()}
    per_request = {name: rows[name] / (samples[name].count + warmup) for name in sides}
    ratios = {
        how: _ratio(samples[f"{ROUTED}, {how}"].p50_ms, samples[f"{PLAIN}, {how}"].p50_ms)
        for how in (STORE, API)
    }
    rows_ok = all(
        per_request[f"{side}, {how}"] == (1.0 if side == ROUTED else 0.0) for how, side in tenants
    )
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
        "p50_ratio": ratios[STORE],
        "p50_ratio_api": ratios[API],
        "target_ratio": TARGET_RATIO,
        "met": ratios[STORE] <= TARGET_RATIO and ratios[API] <= TARGET_RATIO and rows_ok,
    }


def _ratio(routed_ms: float, plain_ms: float) -> float:
    return round(routed_ms / plain_ms, 3) if plain_ms else 0.0


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
        "`ApprovalStore.request` and `POST …/approvals` through Django's WSGI handler,"
        " interleaved):",
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
        f"Routed p50 ÷ plain p50: store {result['p50_ratio']:.2f}x, API"
        f" {result.get('p50_ratio_api', 0):.2f}x"
        f" (target ≤ {result['target_ratio']}x, one row per notice): {verdict}.",
        "",
    ]
    return lines
