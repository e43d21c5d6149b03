"""`--only binding`: `stateroom.sql.hot_cursor()` beside Django's documented server-side binding.

The same store operations as the store section (the same closures, the same
store code), each call inside a tenant transaction (`in_tenant(tenant)`: BEGIN,
the tenant setting, the store's statements, COMMIT — what a request or a job
pays), three ways in one process:

- `hot_cursor`: today's settings; the hot statements go through
  `hot_cursor()`'s own server-binding psycopg cursor with psycopg's C
  timestamptz loader (prepared after `DB_PREPARE_THRESHOLD` runs);
- `server_side_binding`: the very same code on a second connection configured
  as Django documents it, `OPTIONS={"server_side_binding": True,
  "prepare_threshold": 5}`, swapped in as the `default` connection for these
  calls; `hot_cursor()` then yields that connection's ordinary
  `connection.cursor()` (and the ORM's queries bind on the server too);
- the same two with every call of a round in ONE open tenant transaction
  (`open tx`): the statements alone, without the per-call BEGIN, tenant
  setting, COMMIT and its fsync, which both paths pay alike and which hide
  the difference on a busy machine;
- `one message` (reference): `in_tenant(tenant, atomic=False)`, where
  `hot_cursor(alone=True)` sends the tenant setting and the statement
  together through libpq's pipeline, one round trip (server-side binding
  has no such path); its ratio to `hot_cursor` is that path against the
  four-statement shape of the same store code.

Then, for five of the ops in one open transaction on the default connection,
what of `hot_cursor()`'s own cursor pays: a cursor per statement (as it is),
one kept per connection (as it was before this measurement), and per
statement with Django's timestamptz loader instead of psycopg's C one.

Each op runs `repeats` times; in each repeat every side runs `iterations`
calls, in three rounds with the order rotated (and reversed) each
round, so no side always gets the warmer cache. Reported: the median of the
repeats' ops/s per side, the ratio hot_cursor ÷ server_side_binding and the
verdict (hot_cursor kept only if ≥ 1.10x).
"""

from __future__ import annotations

import copy
import os
import statistics
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from datetime import UTC, datetime

from . import floor_tables
from .database import connect
from .generate import Catalogue
from .raw_floor import RawFloor
from .scale import Scale
from .store_ops import build_ops
from .timing import Sample, measure

KEEP_RATIO = 1.10  # hot_cursor must be at least this much faster to stay
# side: (on the server_side_binding connection?, how each call is scoped)
#   "tx": each call in its own `in_tenant(tenant)` transaction;
#   "open": every call of a round in one open `in_tenant(tenant)` transaction
#           (the statements alone: no BEGIN / tenant setting / COMMIT / fsync per call);
#   "message": `in_tenant(tenant, atomic=False)`, one message per hot operation.
SIDES = {
    "hot_cursor": (False, "tx"),
    "server_side_binding": (True, "tx"),
    "one message": (False, "message"),
    "hot_cursor, open tx": (False, "open"),
    "server_side_binding, open tx": (True, "open"),
}
NAMES = tuple(SIDES)


def _binding_connection():
    """A second `default` connection with Django's documented server-side binding."""
    from django.db import connections
    from django.db.utils import load_backend

    settings = copy.deepcopy(connections["default"].settings_dict)
    settings["OPTIONS"] = {
        **settings.get("OPTIONS", {}),
        "server_side_binding": True,
        "prepare_threshold": 5,
    }
    return load_backend(settings["ENGINE"]).DatabaseWrapper(settings, "default")


@contextmanager
def _as_default(wrapper):
    from django.db import connections

    if wrapper is None:
        yield
        return
    previous = connections["default"]
    connections["default"] = wrapper
    try:
        yield
    finally:
        connections["default"] = previous


def _count(fn: Callable[[int], object], i: int) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        fn(i)
    return len(ctx.captured_queries)


def run(url: str, scale: Scale, cat: Catalogue, log, *, repeats: int = 3) -> dict:
    from django_scopes import scope as scopes_scope

    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tag, binding = uuid.uuid4().hex[:6], _binding_connection()
    tenant, mode = Tenant.objects.get(pk=cat.tenant_pk), {"scope": "tx"}

    def scope(tenant):
        if mode["scope"] == "open":
            return scopes_scope(tenant=tenant)
        return in_tenant(tenant, atomic=mode["scope"] == "tx")

    def call(side: str, fn: Callable[[int], object]) -> Callable[[int], object]:
        def go(i: int) -> object:
            mode["scope"] = SIDES[side][1]
            return fn(i)

        return go

    @contextmanager
    def on(side: str):
        on_binding, how = SIDES[side]
        with _as_default(binding if on_binding else None):
            if how == "open":
                with in_tenant(tenant):
                    yield
            else:
                yield

    rows = []
    per_round = max(1, scale.op_iterations // 3)
    try:
        floor_tables.prepare(url, log)
        with connect(url) as conn, connect(url) as conn_tx:
            floor = RawFloor(conn, cat.tenant_pk, one_statement=True)
            floor_tx = RawFloor(conn_tx, cat.tenant_pk)
            ops = build_ops(cat, floor, tag, floor_tx, scope=scope)
            for op in ops:
                queries = {}
                for n, side in enumerate(NAMES):
                    with on(side):
                        queries[side] = _count(call(side, op.stateroom), 10**6 + 2 * n)
                rates, p50 = _rounds(op, on, call, per_round, repeats)
                rows.append(_row(op, queries, rates, p50, log))
            ablation = _cursor_ablation(ops, tenant, per_round, repeats, log)
    finally:
        binding.close()
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "repeats": repeats,
        "calls_per_side_per_repeat": per_round * 3,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "operations": rows,
        "cursor_ablation": ablation,
    }
    log("\n" + markdown(result))
    return result


def _rounds(op, on, call, per_round: int, repeats: int):
    """Ops per second and p50 of each side, per repeat: each repeat runs the sides in three
    rotated orders (every other one reversed), `per_round` calls each."""
    rates: dict[str, list[float]] = {side: [] for side in NAMES}
    p50: dict[str, list[float]] = {side: [] for side in NAMES}
    for _ in range(repeats):
        samples = {side: Sample() for side in NAMES}
        for shift in range(3):
            order = NAMES[shift:] + NAMES[:shift]
            if shift % 2:
                order = tuple(reversed(order))
            for side in order:
                with on(side):
                    timed = measure(call(side, op.stateroom), iterations=per_round, warmup=10)
                samples[side] = samples[side].merge(timed)
        for side in NAMES:
            rates[side].append(samples[side].ops_per_s)
            p50[side].append(samples[side].p50_ms)
    return rates, p50


def _row(op, queries: dict, rates: dict, p50: dict, log) -> dict:
    """The operation's result row (medians over the repeats, the ratios), logged."""
    med = {side: statistics.median(rates[side]) for side in NAMES}
    ratio = med["hot_cursor"] / med["server_side_binding"]
    ratio_open = med["hot_cursor, open tx"] / med["server_side_binding, open tx"]
    one = med["one message"] / med["hot_cursor"]
    row = {
        "operation": op.name,
        "ops_per_s": {side: round(med[side], 1) for side in NAMES},
        "p50_ms": {side: round(statistics.median(p50[side]), 3) for side in NAMES},
        "repeats_ops_per_s": {side: [round(r, 1) for r in rates[side]] for side in NAMES},
        "queries_per_call": queries,
        "ratio_hot_cursor_vs_binding": round(ratio, 3),
        "ratio_open_tx": round(ratio_open, 3),
        "ratio_one_message_vs_hot_cursor": round(one, 3),
        "keep_hot_cursor": ratio >= KEEP_RATIO,
    }
    log(
        f"  {op.name}: hot_cursor {med['hot_cursor']:.0f} ops/s,"
        f" server_side_binding {med['server_side_binding']:.0f} ops/s"
        f" (ratio {ratio:.2f}); open tx {ratio_open:.2f};"
        f" one message {med['one message']:.0f} ops/s ({one:.2f}x hot_cursor)"
        f"; queries/call {queries}; repeats {row['repeats_ops_per_s']}"
    )
    return row


ABLATED = (
    "read last 50 items",
    "pending approvals (page of 50)",
    "checkpoint history (20)",
    "append 1 item",
    "run compare-and-set",
)


def _cursor_ablation(ops, tenant, per_round: int, repeats: int, log) -> dict:
    """What of `hot_cursor()`'s own cursor pays: in one open tenant transaction on the
    default connection, its cursor per statement (as it is), one cursor kept per
    connection (as it was), and per statement with Django's timestamptz loader."""
    import psycopg
    from psycopg.types.datetime import TimestamptzLoader

    from stateroom import sql
    from tenancy_app.scoping import in_tenant

    as_is = sql._raw_cursor

    class Kept(psycopg.Cursor):
        def close(self) -> None:  # hot_cursor closes its cursor after each statement
            pass

    def kept(connection):
        raw = getattr(connection, "_bench_kept_cursor", None)
        if raw is None or raw.connection is not connection.connection:
            raw = Kept(connection.connection)
            raw.adapters.register_loader("timestamptz", TimestamptzLoader)
            connection._bench_kept_cursor = raw
        return raw

    def django_loader(connection):
        return psycopg.Cursor(connection.connection)

    variants = {"per statement": as_is, "kept": kept, "Django loader": django_loader}
    found = {}
    try:
        for op in ops:
            if op.name not in ABLATED:
                continue
            rates: dict[str, list[float]] = {v: [] for v in variants}
            for rep in range(repeats * 2):
                names = list(variants) if rep % 2 == 0 else list(reversed(variants))
                for name in names:
                    sql._raw_cursor = variants[name]
                    with in_tenant(tenant):
                        timed = measure(op.stateroom, iterations=per_round, warmup=10)
                    rates[name].append(timed.ops_per_s)
            med = {name: statistics.median(r) for name, r in rates.items()}
            found[op.name] = {name: round(m, 1) for name, m in med.items()}
            log(
                f"  cursor ablation, {op.name}: "
                + ", ".join(
                    f"{name} {m:.0f} ops/s ({m / med['per statement']:.2f})"
                    for name, m in med.items()
                )
            )
    finally:
        sql._raw_cursor = as_is
    return found


def markdown(result: dict) -> str:
    lines = [
        "| operation | hot_cursor ops/s | server_side_binding ops/s | ratio | verdict"
        " | open tx: hot_cursor / server_side_binding ops/s (ratio)"
        " | one message ops/s (x hot_cursor) | queries per call (tx / message) |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for row in result["operations"]:
        o, q = row["ops_per_s"], row["queries_per_call"]
        verdict = "keep hot_cursor" if row["keep_hot_cursor"] else "Django's path"
        lines.append(
            f"| {row['operation']} | {o['hot_cursor']:.0f} | {o['server_side_binding']:.0f}"
            f" | {row['ratio_hot_cursor_vs_binding']:.2f} | {verdict}"
            f" | {o['hot_cursor, open tx']:.0f} / {o['server_side_binding, open tx']:.0f}"
            f" ({row['ratio_open_tx']:.2f})"
            f" | {o['one message']:.0f} ({row['ratio_one_message_vs_hot_cursor']:.2f})"
            f" | {q['hot_cursor']} / {q['server_side_binding']} / {q['one message']} |"
        )
    lines += [
        "",
        "| operation (open tx) | cursor per statement ops/s | one kept per connection | Django's"
        " timestamptz loader |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, med in result.get("cursor_ablation", {}).items():
        base = med["per statement"]
        lines.append(
            f"| {name} | {base:.0f} | {med['kept']:.0f} ({med['kept'] / base:.2f})"
            f" | {med['Django loader']:.0f} ({med['Django loader'] / base:.2f}) |"
        )
    return "\n".join(lines)
