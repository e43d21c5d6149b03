"""Store operations: Stateroom's stores against the physical floor and the peers.

Sides, each on its own connection, on the first tenant of the data set
(which holds 1/100 of the rows and shares tables and indexes with the other 99):

- Stateroom: the store inside `in_tenant(tenant, atomic=False)`, as the
  runtime API's hot endpoints and workers call it: each hot operation is one
  message (tenant setting + statement, one implicit transaction);
- the one-statement floor (`RawFloor(one_statement=True)`): one autocommit
  psycopg statement per operation, the tenant set once per connection — the
  physical floor; the target is >= 0.8x its ops/s;
- the four-statement floor (BEGIN, set_config, statement, COMMIT), what the
  stores paid before, shown for reference;
- LangGraph's `PostgresSaver` (put / get_tuple / list) on the same ~10 KB
  checkpoint state, for the checkpoint operations.

Each side runs `iterations` timed calls, interleaved call by call with the
others (`measure_interleaved`), so all sides meet the same machine.
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
from .timing import measure_interleaved

TARGET_RATIO = 0.8  # x the one-statement floor
CONTENTION_TARGET = 0.6
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
    raw: Callable[[int], object]  # the one-statement floor
    raw_tx: Callable[[int], object] | None = None  # the four-statement floor
    peer: Callable[[int], object] | None = None  # LangGraph PostgresSaver, same input
    # A Django call counted with CaptureQueriesContext, and the raw floor's statement count.
    stateroom_queries: int = 0
    raw_queries: int = 0
    stateroom_sql: list[str] | None = None


def build_ops(
    cat: Catalogue,
    floor: RawFloor,
    tag: str,
    floor_tx: RawFloor,
    scope: Callable[[object], object] | None = None,
) -> list[Op]:
    """The operations; `scope(tenant)` is what each Stateroom call runs in (default:
    `in_tenant(tenant, atomic=False)`)."""
    from effects_app.store import EffectStore
    from runs_app.store import RunStateStore
    from sessions_app.store import SessionStore
    from stateroom.actor import Actor
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

    def hot():
        return scope(tenant) if scope else in_tenant(tenant, atomic=False)

    def append(count: int, side: str) -> Callable[[int], object]:
        def stateroom(i: int) -> object:
            with hot():
                return sessions.append_items(
                    session_id=sess[i % len(sess)],
                    items=[item(i, n) for n in range(count)],
                    idempotency_key=f"{tag}-{side}-{count}-{i}-{uuid.uuid4().hex[:8]}",
                )

        def raw(i: int) -> object:
            return (floor_tx if side == "t" else floor).append_items_or_replay(
                session_id=sess[i % len(sess)],
                items=[item(i, n) for n in range(count)],
                idempotency_key=f"{tag}-{side}-{count}-{i}-{uuid.uuid4().hex[:8]}",
            )

        return stateroom if side == "s" else raw

    def read_s(i: int) -> object:
        with hot():
            return sessions.get_items(
                session_id=sess[i % len(sess)], limit=50, before_seq=READ_LAST
            )

    def read_r(i: int, f: RawFloor = floor) -> object:
        return f.last_items(session_id=sess[i % len(sess)], limit=50)

    def changes(run_id: str) -> dict:
        v = versions[run_id]
        return {"turn_index": v % 1000, "token_used": v * 10, "current_node_id": f"node-{v % 7}"}

    def cas_s(i: int) -> object:
        run_id = run_ids[i % len(run_ids)]
        with hot():
            run = runs.compare_and_set(
                run_id=run_id, expected_version=versions[run_id], changes=changes(run_id)
            )
        versions[run_id] = run.version
        return run

    def cas_r(i: int, f: RawFloor = floor) -> object:
        run_id = run_ids[i % len(run_ids)]
        versions[run_id] = f.compare_and_set(
            run_id=run_id, expected_version=versions[run_id], changes=changes(run_id)
        )
        return versions[run_id]

    def save_s(i: int) -> object:
        with hot():
            return tasks.append_checkpoint(
                task_id=task_ids[i % len(task_ids)], schema_version=1, state=states[i % 16]
            )

    def save_r(i: int, f: RawFloor = floor) -> object:
        return f.append_checkpoint(
            task_id=task_ids[i % len(task_ids)], schema_version=1, state=states[i % 16]
        )

    def load_s(i: int) -> object:
        with hot():
            return tasks.latest_checkpoint(task_ids[i % len(task_ids)])

    def load_r(i: int, f: RawFloor = floor) -> object:
        return f.latest_checkpoint(task_id=task_ids[i % len(task_ids)])

    def history_s(i: int) -> object:
        with hot():
            found = tasks.checkpoint_history(task_ids[i % len(task_ids)], limit=20)
        return found

    def history_r(i: int, f: RawFloor = floor) -> object:
        return f.checkpoint_history(task_id=task_ids[i % len(task_ids)], limit=20)

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
        with hot():
            return effects.record(**effect_args(i, "s"))

    def effect_r(i: int, f: RawFloor = floor, side: str = "r") -> object:
        return f.record_effect(**effect_args(i, side))

    from approvals_app.store import ApprovalStore

    approvals = ApprovalStore(tenant, actor)

    def pending_s(i: int) -> object:
        # What GET /approvals?status=pending renders: the page, as the API's dicts.
        with hot():
            return approvals.pending_page(limit=50)

    def pending_r(i: int, f: RawFloor = floor) -> object:
        return f.pending_approvals(limit=50)

    def tx(fn: Callable[..., object]) -> Callable[[int], object]:
        return lambda i: fn(i, floor_tx)

    return [
        Op("append 1 item", append(1, "s"), append(1, "r"), append(1, "t")),
        Op("append 10 items", append(10, "s"), append(10, "r"), append(10, "t")),
        Op("read last 50 items", read_s, read_r, tx(read_r)),
        Op("run compare-and-set", cas_s, cas_r, tx(cas_r)),
        Op("save checkpoint (~10 KB)", save_s, save_r, tx(save_r)),
        Op("load latest checkpoint", load_s, load_r, tx(load_r)),
        Op("checkpoint history (20)", history_s, history_r, tx(history_r)),
        Op("pending approvals (page of 50)", pending_s, pending_r, tx(pending_r)),
        Op(
            "record-or-return effect",
            effect_s,
            effect_r,
            lambda i: effect_r(i, floor_tx, "t"),
        ),
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
    with connect(url) as conn, connect(url) as conn_tx, _postgres_saver(log) as saver:
        floor = RawFloor(conn, cat.tenant_pk, one_statement=True)
        floor_tx = RawFloor(conn_tx, cat.tenant_pk)
        ops = build_ops(cat, floor, tag, floor_tx)
        if saver is not None:
            _add_peers(ops, saver, tag)
        results = []
        for op in ops:
            count_queries(op, floor)
            sides = {"stateroom": op.stateroom, "raw": op.raw, "raw_tx": op.raw_tx, "peer": op.peer}
            sides = {name: fn for name, fn in sides.items() if fn is not None}
            rounds = measure_interleaved(sides, iterations=scale.op_iterations)
            s, r = rounds["stateroom"], rounds["raw"]
            ratio = s.ops_per_s / r.ops_per_s if r.ops_per_s else 0.0
            row = {
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
            line = (
                f"  {op.name}: Stateroom {s.ops_per_s:.0f} ops/s p50 {s.p50_ms:.2f} ms,"
                f" 1-statement floor {r.ops_per_s:.0f} ops/s, ratio {ratio:.2f}"
            )
            if "raw_tx" in rounds:
                t = rounds["raw_tx"]
                row["raw_tx"] = t.summary()
                row["ratio_tx"] = round(s.ops_per_s / t.ops_per_s, 3) if t.ops_per_s else 0.0
                line += f"; 4-statement floor {t.ops_per_s:.0f} ops/s ({row['ratio_tx']:.2f})"
            if "peer" in rounds:
                p = rounds["peer"]
                row["peer"] = p.summary()
                row["ratio_peer"] = round(s.ops_per_s / p.ops_per_s, 3) if p.ops_per_s else 0.0
                line += f"; PostgresSaver {p.ops_per_s:.0f} ops/s ({row['ratio_peer']:.2f})"
            log(line + f" (queries per 2 calls {op.stateroom_queries} vs {op.raw_queries})")
            results.append(row)
        results.append(_contention(cat, url, scale, log))
    return {"operations": results}


class _NoSaver:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _postgres_saver(log):
    """LangGraph's PostgresSaver in a schema of its own, run by the owner role (it creates
    tables); None (no peer rows) without langgraph-checkpoint-postgres or an owner URL."""
    import contextlib
    import os

    owner = os.environ.get("DATABASE_OWNER_URL")
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        log("  (no langgraph-checkpoint-postgres: no PostgresSaver rows)")
        return _NoSaver()
    if not owner:
        log("  (no DATABASE_OWNER_URL: no PostgresSaver rows)")
        return _NoSaver()

    @contextlib.contextmanager
    def saver():
        import psycopg

        from .database import libpq_url
        from .langgraph import SCHEMA, postgres_url

        with psycopg.connect(libpq_url(owner), autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
            conn.execute(f"CREATE SCHEMA {SCHEMA}")
        try:
            with PostgresSaver.from_conn_string(postgres_url(owner)) as found:
                found.setup()
                yield found
        finally:
            with psycopg.connect(libpq_url(owner), autocommit=True) as conn:
                conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")

    return saver()


def _add_peers(ops: list[Op], saver, tag: str) -> None:
    """PostgresSaver on the same ~10 KB state: put (save), get_tuple (load), list 20 (history)."""
    from langgraph.checkpoint.base import empty_checkpoint

    threads = [f"peer-{tag}-{n}" for n in range(16)]
    heads: dict[str, dict] = {}
    steps: dict[str, int] = {}

    def config(thread_id: str) -> dict:
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}

    def put(i: int) -> object:
        thread_id = threads[i % len(threads)]
        step = steps.get(thread_id, 0) + 1
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"state": checkpoint_state(i)}
        checkpoint["channel_versions"] = {"state": step}
        head = saver.put(
            heads.get(thread_id, config(thread_id)),
            checkpoint,
            {"source": "loop", "step": step},
            {"state": step},
        )
        heads[thread_id], steps[thread_id] = head, step
        return head

    def get(i: int) -> object:
        found = saver.get_tuple(config(threads[i % len(threads)]))
        assert found is not None and "state" in found.checkpoint["channel_values"]
        return found

    def history(i: int) -> object:
        return list(saver.list(config(threads[i % len(threads)]), limit=20))

    for n in range(len(threads) * 21):  # every thread has a history of 20 before timing
        put(n)
    by_name = {op.name: op for op in ops}
    by_name["save checkpoint (~10 KB)"].peer = put
    by_name["load latest checkpoint"].peer = get
    by_name["checkpoint history (20)"].peer = history


def _contention(cat: Catalogue, url: str, scale: Scale, log) -> dict:
    """Two threads read a run and compare-and-set it, on ONE row; a refused CAS reads again.

    Successful CASes per second of both threads together, Stateroom (the store under
    `in_tenant(atomic=False)`: a read and a CAS, each one message) against the
    one-statement floor (a SELECT and the CAS statement, autocommit). Target: >= 0.6x.
    """
    import threading
    import time

    from django.db import connection

    from runs_app.store import RunStateStore
    from stateroom.actor import Actor
    from stateroom.errors import Conflict
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    run_id = cat.running_runs[0]
    per_thread = max(100, scale.op_iterations // 2)

    def stateroom_worker(done: list) -> None:
        store = RunStateStore(tenant, Actor("token", "1", "token:bench"))
        wins = 0
        try:
            with in_tenant(tenant, atomic=False):
                while wins < per_thread:
                    run = store.get(run_id)
                    try:
                        store.compare_and_set(
                            run_id=run_id,
                            expected_version=run.version,
                            changes={"turn_index": run.version % 1000},
                        )
                        wins += 1
                    except Conflict:
                        pass
        finally:
            connection.close()
        done.append(wins)

    def floor_worker(done: list) -> None:
        with connect(url) as conn:
            floor = RawFloor(conn, cat.tenant_pk, one_statement=True)
            wins = 0
            while wins < per_thread:
                _, version, _ = floor.read_run(run_id=run_id)
                if floor.try_compare_and_set(
                    run_id=run_id,
                    expected_version=version,
                    changes={"turn_index": version % 1000, "token_used": 0, "current_node_id": ""},
                ):
                    wins += 1
        done.append(wins)

    def timed(worker) -> float:
        done: list = []
        threads = [threading.Thread(target=worker, args=(done,)) for _ in range(2)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(done) / (time.perf_counter() - start)

    rates = {"stateroom": [], "raw": []}
    for order in (("stateroom", "raw"), ("raw", "stateroom")):
        for side in order:
            rates[side].append(timed(stateroom_worker if side == "stateroom" else floor_worker))
    s, r = sum(rates["stateroom"]) / 2, sum(rates["raw"]) / 2
    ratio = s / r if r else 0.0
    log(
        f"  read + CAS, 2 threads on one row: Stateroom {s:.0f} CAS/s,"
        f" 1-statement floor {r:.0f} CAS/s, ratio {ratio:.2f}"
    )
    summary = {
        "ops_per_s": round(s, 1),
        "p50_ms": 0.0,
        "p95_ms": 0.0,
        "mean_ms": 0.0,
        "count": 4 * per_thread,
    }
    return {
        "operation": "read + CAS, 2 threads on one row",
        "stateroom": summary,
        "raw": {**summary, "ops_per_s": round(r, 1)},
        "ratio": round(ratio, 3),
        "target_ratio": CONTENTION_TARGET,
        "met": ratio >= CONTENTION_TARGET,
        "stateroom_queries_per_call": 2.0,
        "raw_queries_per_call": 2.0,
        "stateroom_sql": [],
    }
