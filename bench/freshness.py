"""Search freshness: how long after its append an item is findable, while appends run.

Search is off the append path (sessions_app.search_index): the indexer job,
woken every `STATEROOM_SEARCH_INDEX_INTERVAL` (0.5 s), indexes what waits. Redis:
`BENCH_BROKER_URL` (default redis://127.0.0.1:6379/14). The
promise: an appended item is findable within 2 s at p99 while the append
benchmark runs (issue 40).

How: a real Celery worker (`celery -A stateroom worker`, a process of its
own, on Redis) runs `index_items`; this process plays beat, publishing it
every interval with the same expiry. Two threads append as the store
benchmark does (1 and 10 items, on the catalogue's sessions); a probe
appends one item with a word of its own every ~0.25 s and searches for it
every 20 ms through the store's search, until found. Latency: from the
append's commit to the first search that finds it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from .scale import Scale
from .store_ops import item

TARGET_P99_S = 2.0
ROOT = Path(__file__).resolve().parent.parent


def run(url: str, scale: Scale, cat, log) -> dict:
    from celery import Celery
    from django.conf import settings

    from sessions_app.tasks import INDEX_ITEMS

    probes = max(40, scale.op_iterations // 5)
    # The bench's own process publishes to memory:// (bench/__main__.py); the indexer's
    # worker needs a real broker.
    broker = os.environ.get("BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
    queue = f"bench-index-{uuid.uuid4().hex[:8]}"
    interval = settings.STATEROOM_SEARCH_INDEX_INTERVAL
    log(f"freshness: {probes} probes while 2 threads append; indexer every {interval:g} s")
    app = Celery("bench-beat", broker=broker)  # publishes by name, as beat does
    stop = threading.Event()
    counts = {"appends": 0}
    with _worker(broker, queue) as worker_log:
        ticker = threading.Thread(
            target=_beat, args=(app, INDEX_ITEMS, queue, interval, stop, broker), daemon=True
        )
        ticker.start()
        appenders = [
            threading.Thread(target=_appender, args=(cat, n, size, stop, counts))
            for n, size in enumerate((1, 10))
        ]
        for thread in appenders:
            thread.start()
        try:
            latencies = _probe(cat, probes)
        finally:
            stop.set()
            for thread in (*appenders, ticker):
                thread.join()
            app.close()
        if None in latencies:
            log(
                "freshness: a probe was never found; worker log:\n" + worker_log.read_text()[-3000:]
            )
    found = sorted(x for x in latencies if x is not None)
    return _result(found, latencies, counts["appends"], interval)


def _result(found: list[float], latencies: list, appends: int, interval: float) -> dict:
    p99 = _percentile(found, 99) if found else None
    return {
        "probes": len(latencies),
        "never_found": latencies.count(None),
        "appends_meanwhile": appends,
        "interval_s": interval,
        "p50_s": round(_percentile(found, 50), 3) if found else None,
        "p95_s": round(_percentile(found, 95), 3) if found else None,
        "p99_s": round(p99, 3) if p99 is not None else None,
        "max_s": round(found[-1], 3) if found else None,
        "mean_s": round(statistics.fmean(found), 3) if found else None,
        "target_p99_s": TARGET_P99_S,
        "met": bool(found) and latencies.count(None) == 0 and p99 <= TARGET_P99_S,
    }


def _percentile(ordered: list[float], p: float) -> float:
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


@contextmanager
def _worker(broker: str, queue: str):
    """A Celery worker process on `queue`, on the bench database (this process's env)."""
    log = Path(tempfile.mkstemp(prefix="bench-indexer-", suffix=".log")[1])
    env = {
        **os.environ,
        "CELERY_BROKER_URL": broker,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
    }
    command = [
        str(Path(sys.executable).with_name("celery")),
        *("-A", "stateroom", "worker", "-Q", queue, "-n", f"{queue}@%h", "-P", "solo"),
        *("--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"),
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while "ready." not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.2)
        yield log
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.unlink(missing_ok=True)


def _beat(app, task: str, queue: str, interval: float, stop: threading.Event, broker: str) -> None:
    """What beat does with the `index-items` entry: publish every `interval`, expiring.

    On a connection of its own: Celery would take CELERY_BROKER_URL from the environment
    (the bench's memory://) before the app's broker."""
    from kombu import Connection

    with Connection(broker) as connection:
        while not stop.wait(interval):
            app.send_task(task, queue=queue, expires=5 * interval, connection=connection)


def _appender(cat, n: int, size: int, stop: threading.Event, counts: dict) -> None:
    from django.db import connection

    from sessions_app.store import SessionStore
    from stateroom.actor import Actor
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    store = SessionStore(tenant, Actor("token", "1", "token:bench"))
    sessions = cat.active_sessions[1:]
    i = 0
    try:
        while not stop.is_set():
            with in_tenant(tenant, atomic=False):
                store.append_items(
                    session_id=sessions[(i * 2 + n) % len(sessions)],
                    items=[item(i, k) for k in range(size)],
                )
            counts["appends"] += 1
            i += 1
    finally:
        connection.close()


def _probe(cat, probes: int) -> list[float | None]:
    """Append a word of its own, then search for it every 20 ms: seconds until found."""
    from django.db import connection

    from sessions_app.store import SessionStore
    from stateroom.actor import Actor
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    store = SessionStore(tenant, Actor("token", "1", "token:bench"))
    latencies: list[float | None] = []
    try:
        for _ in range(probes):
            word = f"fresh{uuid.uuid4().hex[:12]}"
            with in_tenant(tenant, atomic=False):
                store.append_items(
                    session_id=cat.active_sessions[0],
                    items=[{"role": "user", "item_type": "message", "payload": {"text": word}}],
                )
            written = time.perf_counter()
            latencies.append(_until_found(store, tenant, word, written))
            if latencies[-1] is None:
                break  # the indexer is not running: the log says why
            time.sleep(0.25)
    finally:
        connection.close()
    return latencies


def _until_found(store, tenant, word: str, written: float, timeout: float = 15.0):
    from tenancy_app.scoping import in_tenant

    while time.perf_counter() - written < timeout:
        with in_tenant(tenant, atomic=False):
            hits, _ = store.search_items(query=word, limit=1)
        if hits:
            return time.perf_counter() - written
        time.sleep(0.02)
    return None


def render(result: dict) -> list[str]:
    """The section's Markdown lines (bench/report.py)."""
    if not result or "p99_s" not in result:
        return []
    verdict = "met" if result["met"] else "**MISSED**"
    return [
        f"**Search freshness** ({result['probes']} probes while two threads appended"
        f" {result['appends_meanwhile']} times; indexer woken every {result['interval_s']:g} s,"
        " a real Celery worker): from an append's commit to the first search that finds it,"
        f" p50 {result['p50_s']} s, p95 {result['p95_s']} s, p99 {result['p99_s']} s,"
        f" max {result['max_s']} s; never found: {result['never_found']}."
        f" Target p99 ≤ {result['target_p99_s']:g} s: {verdict}.",
        "",
    ]
