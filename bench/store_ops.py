"""Store operations: Stateroom's stores inside `in_tenant` against the raw psycopg floor.

Each operation runs `iterations` timed calls per side, in two rounds with
the order swapped (Stateroom then raw, raw then Stateroom) so neither side
always gets the warmer cache. Calls are sequential on one connection per
side, on the first tenant of the data set (which holds 1/100 of the rows
and shares tables and indexes with the other 99).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from .database import connect
from .generate import Catalogue
from .raw_floor import RawFloor
from .scale import Scale
from .timing import Sample, measure

TARGET_RATIO = 0.6
READ_LAST = 2**62  # before_seq for "the last 50": every seq is below it


def item(i: int, n: int) -> dict:
    text = hashlib.md5(f"{i}:{n}".encode()).hexdigest()
    return {
        "role": "assistant" if n % 2 else "user",
        "item_type": "message",
        "payload": {
            "type": "message",
            "content": f"Bench turn {i}.{n}: {text} {text[::-1]} {text.upper()} {text}",
            "tokens": (i * 37 + n) % 500,
        },
    }


def checkpoint_state(i: int) -> dict:
    """~10 KB of JSON domain data, like the generated checkpoints."""
    return {
        "plan_version": "plan-v2",
        "cursor": i,
        "completed_nodes": ["fetch", "classify", "reconcile"],
        "memory": [hashlib.md5(f"{i}:{m}".encode()).hexdigest() for m in range(280)],
    }


@dataclass
class Op:
    name: str
    stateroom: Callable[[int], object]
    raw: Callable[[int], object]
    # A Django call counted with CaptureQueriesContext, and the raw floor's statement count.
    stateroom_queries: int = 0
    raw_queries: int = 0
    stateroom_sql: list[str] | None = None


def build_ops(cat: Catalogue, floor: RawFloor, tag: str) -> list[Op]:
    from audit_app.actor import Actor
    from effects_app.store import EffectStore
    from runs_app.store import RunStateStore
    from sessions_app.store import SessionStore
    from tasks_app.store import TaskStateStore
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    actor = Actor("token", "1", "token:bench")
    sessions = SessionStore(tenant, actor)
    runs = RunStateStore(tenant, actor)
    tasks = TaskStateStore(tenant, actor)
    effects = EffectStore(tenant, actor)
    sess = cat.active_sessions
    task_ids = cat.active_tasks
    run_ids = cat.running_runs
    states = [checkpoint_state(i) for i in range(16)]
    with in_tenant(tenant):
        versions = {r: runs.get(r).version for r in run_ids}
    keys: dict[str, str] = {}

    def append(count: int, side: str) -> Callable[[int], object]:
        def stateroom(i: int) -> object:
            with in_tenant(tenant):
                return sessions.append_items(
                    session_id=sess[i % len(sess)],
                    items=[item(i, n) for n in range(count)],
                    idempotency_key=f"{tag}-{side}-{count}-{i}-{uuid.uuid4().hex[:8]}",
                )

        def raw(i: int) -> object:
            return floor.append_items_or_replay(
                session_id=sess[i % len(sess)],
                items=[item(i, n) for n in range(count)],
                idempotency_key=f"{tag}-{side}-{count}-{i}-{uuid.uuid4().hex[:8]}",
            )

        return stateroom if side == "s" else raw

    def read_s(i: int) -> object:
        with in_tenant(tenant):
            return sessions.get_items(
                session_id=sess[i % len(sess)], limit=50, before_seq=READ_LAST
            )

    def read_r(i: int) -> object:
        return floor.last_items(session_id=sess[i % len(sess)], limit=50)

    def changes(run_id: str) -> dict:
        v = versions[run_id]
        return {"turn_index": v % 1000, "token_used": v * 10, "current_node_id": f"node-{v % 7}"}

    def cas_s(i: int) -> object:
        run_id = run_ids[i % len(run_ids)]
        with in_tenant(tenant):
            run = runs.compare_and_set(
                run_id=run_id, expected_version=versions[run_id], changes=changes(run_id)
            )
        versions[run_id] = run.version
        return run

    def cas_r(i: int) -> object:
        run_id = run_ids[i % len(run_ids)]
        versions[run_id] = floor.compare_and_set(
            run_id=run_id, expected_version=versions[run_id], changes=changes(run_id)
        )
        return versions[run_id]

    def save_s(i: int) -> object:
        with in_tenant(tenant):
            return tasks.append_checkpoint(
                task_id=task_ids[i % len(task_ids)], schema_version=1, state=states[i % 16]
            )

    def save_r(i: int) -> object:
        return floor.append_checkpoint(
            task_id=task_ids[i % len(task_ids)], schema_version=1, state=states[i % 16]
        )

    def load_s(i: int) -> object:
        with in_tenant(tenant):
            return tasks.latest_checkpoint(task_ids[i % len(task_ids)])

    def load_r(i: int) -> object:
        return floor.latest_checkpoint(task_id=task_ids[i % len(task_ids)])

    def effect_args(i: int, side: str) -> dict:
        # Even calls record a new key, odd calls repeat the previous one: half
        # "record", half "return the existing record".
        slot = f"{side}{i - (i % 2)}"
        if slot not in keys:
            keys[slot] = f"{tag}-{side}-{uuid.uuid4().hex}"
        return {
            "run_id": run_ids[(i // 2) % len(run_ids)],
            "idempotency_key": keys[slot],
            "tool_name": "send_email",
            "request": {"to": f"customer{i // 2}@example.com", "subject": "Your invoice"},
        }

    def effect_s(i: int) -> object:
        with in_tenant(tenant):
            return effects.record(**effect_args(i, "s"))

    def effect_r(i: int) -> object:
        return floor.record_effect(**effect_args(i, "r"))

    return [
        Op("append 1 item", append(1, "s"), append(1, "r")),
        Op("append 10 items", append(10, "s"), append(10, "r")),
        Op("read last 50 items", read_s, read_r),
        Op("run compare-and-set", cas_s, cas_r),
        Op("save checkpoint (~10 KB)", save_s, save_r),
        Op("load latest checkpoint", load_s, load_r),
        Op("record-or-return effect", effect_s, effect_r),
    ]


def count_queries(op: Op, floor: RawFloor) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        op.stateroom(10**6)
        op.stateroom(10**6 + 1)
    op.stateroom_queries = len(ctx.captured_queries)
    # The statements of the second call (the first may differ: e.g. a new effect key).
    half = len(ctx.captured_queries) // 2
    op.stateroom_sql = [q["sql"][:160] for q in ctx.captured_queries[half:]]
    before = floor.statements
    op.raw(10**6)
    op.raw(10**6 + 1)
    op.raw_queries = floor.statements - before


def run(url: str, scale: Scale, cat: Catalogue, log) -> dict:
    tag = uuid.uuid4().hex[:6]
    with connect(url) as conn:
        floor = RawFloor(conn, cat.tenant_pk)
        ops = build_ops(cat, floor, tag)
        results = []
        for op in ops:
            count_queries(op, floor)
            rounds: dict[str, Sample] = {"stateroom": Sample(), "raw": Sample()}
            half = max(1, scale.op_iterations // 2)
            for order in (("stateroom", "raw"), ("raw", "stateroom")):
                for side in order:
                    fn = op.stateroom if side == "stateroom" else op.raw
                    rounds[side] = rounds[side].merge(measure(fn, iterations=half, warmup=10))
            s, r = rounds["stateroom"], rounds["raw"]
            ratio = s.ops_per_s / r.ops_per_s if r.ops_per_s else 0.0
            log(
                f"  {op.name}: Stateroom {s.ops_per_s:.0f} ops/s p50 {s.p50_ms:.2f} ms,"
                f" raw {r.ops_per_s:.0f} ops/s p50 {r.p50_ms:.2f} ms, ratio {ratio:.2f}"
                f" (queries per 2 calls {op.stateroom_queries} vs {op.raw_queries})"
            )
            results.append(
                {
                    "operation": op.name,
                    "stateroom": s.summary(),
                    "raw": r.summary(),
                    "ratio": round(ratio, 3),
                    "target_ratio": TARGET_RATIO,
                    "met": ratio >= TARGET_RATIO,
                    "stateroom_queries_per_call": op.stateroom_queries / 2,
                    "raw_queries_per_call": op.raw_queries / 2,
                    "stateroom_sql": op.stateroom_sql,
                }
            )
    return {"operations": results}
