"""Store operations: Stateroom's stores against the physical floor and the peers.

Sides, each on its own connection, on the first tenant of the data set
(which holds 1/100 of the rows and shares tables and indexes with the other 99):

- Stateroom: the store inside `in_tenant(tenant, atomic=False)`, as the
  runtime API's hot endpoints and workers call it: each hot operation is one
  message (tenant setting + statement, one implicit transaction);
- the same-guarantee floor (`RawFloor(one_statement=True)`): the one
  autocommit psycopg statement a psycopg expert would write for the same
  guarantees, on tables of its own with nothing Stateroom's schema adds
  (`floor_tables`), the tenant set once per connection; the target is >= 0.8x
  its ops/s;
- the plain-statement floor (`PlainFloor`): one plain INSERT, UPDATE or
  SELECT on the same tables, without the guarantees: what they cost;
- LangGraph's `PostgresSaver` (put / get_tuple / list) on the same ~10 KB
  checkpoint state, for the checkpoint operations.

Each side runs `iterations` timed calls, interleaved call by call with the
others (`measure_interleaved`), so all sides meet the same machine.
"""

from __future__ import annotations

import hashlib
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from . import floor_tables
from .database import connect
from .generate import Catalogue
from .raw_floor import PlainFloor, RawFloor
from .scale import Scale
from .timing import measure_interleaved

TARGET_RATIO = 0.8  # x the same-guarantee floor
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
    raw: Callable[[int], object]  # the same-guarantee floor
    raw_tx: Callable[[int], object] | None = None  # the plain-statement floor
    peer: Callable[[int], object] | None = None  # LangGraph PostgresSaver, same input
    # A Django call counted with CaptureQueriesContext, and the raw floor's statement count.
    stateroom_queries: int = 0
    raw_queries: int = 0
    stateroom_sql: list[str] | None = None


class _Calls:
    """Each measured operation as Stateroom's store does it (in `scope(tenant)`, default
    `in_tenant(tenant, atomic=False)`) and as the floors do it (`floor`: the same
    guarantees, `floor_tx`: plain statements), on the catalogue's sessions, runs and tasks. `s` methods are
    Stateroom's, `r` methods a floor's (the one-statement floor unless given another)."""

    def __init__(
        self,
        cat: Catalogue,
        floor: RawFloor,
        tag: str,
        floor_tx: RawFloor,
        scope: Callable[[object], object] | None,
    ) -> None:
        from approvals_app.store import ApprovalStore
        from effects_app.store import EffectStore
        from runs_app.store import RunStateStore
        from sessions_app.store import SessionStore
        from stateroom.actor import Actor
        from tasks_app.store import TaskStateStore
        from tenancy_app.models import Tenant
        from tenancy_app.scoping import in_tenant

        self.tenant = tenant = Tenant.objects.get(pk=cat.tenant_pk)
        actor = Actor("token", "1", "token:bench")
        self.sessions = SessionStore(tenant, actor)
        self.runs = RunStateStore(tenant, actor)
        self.tasks = TaskStateStore(tenant, actor)
        self.effects = EffectStore(tenant, actor)
        self.approvals = ApprovalStore(tenant, actor)
        self.floor, self.floor_tx, self.tag, self.scope = floor, floor_tx, tag, scope
        self.sess = cat.active_sessions
        self.task_ids = cat.active_tasks
        self.run_ids = cat.running_runs
        self.states = [checkpoint_state(i) for i in range(16)]
        with in_tenant(tenant):
            self.versions = {r: self.runs.get(r).version for r in self.run_ids}
        # The floor's runs are rows of its own tables: their versions go their own way.
        self.floor_versions = {r: floor.read_run(run_id=r)[1] for r in self.run_ids}
        self.keys: dict[str, str] = {}

    def hot(self):
        from tenancy_app.scoping import in_tenant

        return self.scope(self.tenant) if self.scope else in_tenant(self.tenant, atomic=False)

    def tx(self, fn: Callable[..., object]) -> Callable[[int], object]:
        """`fn` on the plain-statement floor."""
        return lambda i: fn(i, self.floor_tx)

    def append(self, count: int, side: str) -> Callable[[int], object]:
        """Append `count` items: side "s" Stateroom, "r" the floor, "t" the plain floor."""
        sess = self.sess

        def stateroom(i: int) -> object:
            with self.hot():
                return self.sessions.append_items(
                    session_id=sess[i % len(sess)],
                    items=[item(i, n) for n in range(count)],
                    idempotency_key=f"{self.tag}-{side}-{count}-{i}-{uuid.uuid4().hex[:8]}",
                )

        def raw(i: int) -> object:
            return (self.floor_tx if side == "t" else self.floor).append_items_or_replay(
                session_id=sess[i % len(sess)],
                items=[item(i, n) for n in range(count)],
                idempotency_key=f"{self.tag}-{side}-{count}-{i}-{uuid.uuid4().hex[:8]}",
            )

        return stateroom if side == "s" else raw

    def read_s(self, i: int) -> object:
        with self.hot():
            return self.sessions.get_items(
                session_id=self.sess[i % len(self.sess)], limit=50, before_seq=READ_LAST
            )

    def read_r(self, i: int, f: RawFloor | None = None) -> object:
        return (f or self.floor).last_items(session_id=self.sess[i % len(self.sess)], limit=50)

    def changes(self, run_id: str) -> dict:
        v = self.versions[run_id]
        return {"turn_index": v % 1000, "token_used": v * 10, "current_node_id": f"node-{v % 7}"}

    def cas_s(self, i: int) -> object:
        run_id = self.run_ids[i % len(self.run_ids)]
        with self.hot():
            run = self.runs.compare_and_set(
                run_id=run_id, expected_version=self.versions[run_id], changes=self.changes(run_id)
            )
        self.versions[run_id] = run.version
        return run

    def cas_r(self, i: int, f: RawFloor | None = None) -> object:
        run_id = self.run_ids[i % len(self.run_ids)]
        version = self.floor_versions[run_id]
        self.floor_versions[run_id] = (f or self.floor).compare_and_set(
            run_id=run_id, expected_version=version, changes=self.changes(run_id)
        )
        return self.floor_versions[run_id]

    def task_id(self, i: int) -> str:
        return self.task_ids[i % len(self.task_ids)]

    def save_s(self, i: int) -> object:
        with self.hot():
            return self.tasks.append_checkpoint(
                task_id=self.task_id(i), schema_version=1, state=self.states[i % 16]
            )

    def save_r(self, i: int, f: RawFloor | None = None) -> object:
        return (f or self.floor).append_checkpoint(
            task_id=self.task_id(i), schema_version=1, state=self.states[i % 16]
        )

    def load_s(self, i: int) -> object:
        with self.hot():
            return self.tasks.latest_checkpoint(self.task_id(i))

    def load_r(self, i: int, f: RawFloor | None = None) -> object:
        return (f or self.floor).latest_checkpoint(task_id=self.task_id(i))

    def history_s(self, i: int) -> object:
        with self.hot():
            found = self.tasks.checkpoint_history(self.task_id(i), limit=20)
        return found

    def history_r(self, i: int, f: RawFloor | None = None) -> object:
        return (f or self.floor).checkpoint_history(task_id=self.task_id(i), limit=20)

    def effect_args(self, i: int, side: str) -> dict:
        # Even calls record a new key, odd calls repeat the previous one: half
        # "record", half "return the existing record".
        slot = f"{side}{i - (i % 2)}"
        if slot not in self.keys:
            self.keys[slot] = f"{self.tag}-{side}-{uuid.uuid4().hex}"
        return {
            "run_id": self.run_ids[(i // 2) % len(self.run_ids)],
            "idempotency_key": self.keys[slot],
            "tool_name": "send_email",
            "request": {"to": f"customer{i // 2}@example.com", "subject": "Your invoice"},
        }

    def effect_s(self, i: int) -> object:
        with self.hot():
            return self.effects.record(**self.effect_args(i, "s"))

    def effect_r(self, i: int, f: RawFloor | None = None, side: str = "r") -> object:
        return (f or self.floor).record_effect(**self.effect_args(i, side))

    def pending_s(self, i: int) -> object:
        # What GET /approvals?status=pending renders: the page, as the API's dicts.
        with self.hot():
            return self.approvals.pending_page(limit=50)

    def pending_r(self, i: int, f: RawFloor | None = None) -> object:
        return (f or self.floor).pending_approvals(limit=50)


def build_ops(
    cat: Catalogue,
    floor: RawFloor,
    tag: str,
    floor_tx: RawFloor,
    scope: Callable[[object], object] | None = None,
) -> list[Op]:
    """The operations; `scope(tenant)` is what each Stateroom call runs in (default:
    `in_tenant(tenant, atomic=False)`)."""
    c = _Calls(cat, floor, tag, floor_tx, scope)
    return [
        Op("append 1 item", c.append(1, "s"), c.append(1, "r"), c.append(1, "t")),
        Op("append 10 items", c.append(10, "s"), c.append(10, "r"), c.append(10, "t")),
        Op("read last 50 items", c.read_s, c.read_r, c.tx(c.read_r)),
        Op("run compare-and-set", c.cas_s, c.cas_r, c.tx(c.cas_r)),
        Op("save checkpoint (~10 KB)", c.save_s, c.save_r, c.tx(c.save_r)),
        Op("load latest checkpoint", c.load_s, c.load_r, c.tx(c.load_r)),
        Op("checkpoint history (20)", c.history_s, c.history_r, c.tx(c.history_r)),
        Op("pending approvals (page of 50)", c.pending_s, c.pending_r, c.tx(c.pending_r)),
        Op(
            "record-or-return effect",
            c.effect_s,
            c.effect_r,
            lambda i: c.effect_r(i, floor_tx, "t"),
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
    floor_tables.prepare(url, log)
    with connect(url) as conn, connect(url) as conn_tx, _postgres_saver(log) as saver:
        floor = RawFloor(conn, cat.tenant_pk, one_statement=True)
        floor_tx = PlainFloor(conn_tx, cat.tenant_pk)
        ops = build_ops(cat, floor, tag, floor_tx)
        if saver is not None:
            _add_peers(ops, saver, tag)
        results = []
        for op in ops:
            count_queries(op, floor)
            row, line = _measure_op(op, scale)
            log(line + f" (queries per 2 calls {op.stateroom_queries} vs {op.raw_queries})")
            results.append(row)
        results.append(_contention(cat, url, scale, log))
    return {"operations": results}


RUNS = 3  # each operation is measured this many times: the median ratio, and the spread


def _measure_op(op: Op, scale: Scale) -> tuple[dict, str]:
    """`RUNS` interleaved rounds of the op's sides; the row (median ratios, their spread,
    latencies of all rounds merged) and its log line."""
    sides = {"stateroom": op.stateroom, "raw": op.raw, "raw_tx": op.raw_tx, "peer": op.peer}
    sides = {name: fn for name, fn in sides.items() if fn is not None}
    runs = []
    for run in range(RUNS):
        # Call numbers of their own per round (keys and slots never repeat a round's).
        offset = (run + 1) * 10**7
        shifted = {name: partial(_shifted, fn, offset) for name, fn in sides.items()}
        runs.append(measure_interleaved(shifted, iterations=scale.op_iterations))
    merged = {name: _merge([r[name] for r in runs]) for name in sides}
    s, r = merged["stateroom"], merged["raw"]
    ratios = sorted(_ratio(run["stateroom"], run["raw"]) for run in runs)
    ratio = statistics.median(ratios)
    row = {
        "operation": op.name,
        "stateroom": s.summary(),
        "raw": r.summary(),
        "ratio": round(ratio, 3),
        "ratio_runs": [round(x, 3) for x in ratios],
        "target_ratio": TARGET_RATIO,
        "met": ratio >= TARGET_RATIO,
        "stateroom_queries_per_call": op.stateroom_queries / 2,
        "raw_queries_per_call": op.raw_queries / 2,
        "stateroom_sql": op.stateroom_sql,
    }
    line = (
        f"  {op.name}: Stateroom {s.ops_per_s:.0f} ops/s p50 {s.p50_ms:.2f} ms,"
        f" same-guarantee floor {r.ops_per_s:.0f} ops/s, ratio {ratio:.2f}"
        f" ({ratios[0]:.2f}-{ratios[-1]:.2f} over {RUNS} runs)"
    )
    for side, key, label in (
        ("raw_tx", "ratio_tx", "plain floor"),
        ("peer", "ratio_peer", "PostgresSaver"),
    ):
        if side in merged:
            row[side] = merged[side].summary()
            row[key] = round(
                statistics.median(_ratio(run["stateroom"], run[side]) for run in runs), 3
            )
            line += f"; {label} {merged[side].ops_per_s:.0f} ops/s ({row[key]:.2f})"
    return row, line


def _shifted(fn: Callable[[int], object], offset: int, i: int) -> object:
    return fn(i + offset if i >= 0 else i - offset)


def _merge(samples: list) -> object:
    merged = samples[0]
    for sample in samples[1:]:
        merged = merged.merge(sample)
    return merged


def _ratio(s, r) -> float:
    return s.ops_per_s / r.ops_per_s if r.ops_per_s else 0.0


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
    same-guarantee floor (a SELECT and the CAS statement, autocommit). Target: >= 0.6x.
    """
    from tenancy_app.models import Tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    run_id = cat.running_runs[0]
    per_thread = max(100, scale.op_iterations // 2)
    workers = {
        "stateroom": partial(_stateroom_cas_worker, tenant, run_id, per_thread),
        "raw": partial(_floor_cas_worker, url, cat.tenant_pk, run_id, per_thread),
    }
    rates = {"stateroom": [], "raw": []}
    orders = (("stateroom", "raw"), ("raw", "stateroom"), ("stateroom", "raw"))[:RUNS]
    for order in orders:
        for side in order:
            rates[side].append(_two_threads_rate(workers[side]))
    s, r = statistics.median(rates["stateroom"]), statistics.median(rates["raw"])
    ratios = sorted(
        a / b if b else 0.0 for a, b in zip(rates["stateroom"], rates["raw"], strict=True)
    )
    ratio = statistics.median(ratios)
    log(
        f"  read + CAS, 2 threads on one row: Stateroom {s:.0f} CAS/s,"
        f" same-guarantee floor {r:.0f} CAS/s, ratio {ratio:.2f}"
        f" ({ratios[0]:.2f}-{ratios[-1]:.2f} over {len(ratios)} runs)"
    )
    row = _contention_row(s, r, ratio, per_thread)
    row["ratio_runs"] = [round(x, 3) for x in ratios]
    return row


def _stateroom_cas_worker(tenant, run_id: str, per_thread: int, done: list) -> None:
    """`per_thread` successful CASes through the run store, each after a read."""
    from django.db import connection

    from runs_app.store import RunStateStore
    from stateroom.actor import Actor
    from stateroom.errors import Conflict
    from tenancy_app.scoping import in_tenant

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


def _floor_cas_worker(url: str, tenant_pk: int, run_id: str, per_thread: int, done: list) -> None:
    """`per_thread` successful CASes on the same-guarantee floor, each after a read."""
    with connect(url) as conn:
        floor = RawFloor(conn, tenant_pk, one_statement=True)
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


def _two_threads_rate(worker) -> float:
    """Wins per second of two threads running `worker(done)` together."""
    done: list = []
    threads = [threading.Thread(target=worker, args=(done,)) for _ in range(2)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(done) / (time.perf_counter() - start)


def _contention_row(s: float, r: float, ratio: float, per_thread: int) -> dict:
    """The result row of the contention measurement (no latencies: rates only)."""
    summary = {
        "ops_per_s": round(s, 1),
        "p50_ms": 0.0,
        "p95_ms": 0.0,
        "mean_ms": 0.0,
        "count": 2 * RUNS * per_thread,
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
