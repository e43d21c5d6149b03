"""The content deletion job on a session as long as the timeline one.

A fresh closed session (100,000 items at the default scale, plus 5 runs with
their events and a task with 20 checkpoints of ~10 KB) is generated outside
the timing, its deletion is requested through `DeletionStore.request`
(not enqueued) and `DeletionStore.run` is timed as the Celery task
calls it: in time slices (`time_budget`), each slice a new `run` call that
resumes the job from what its batches saved, as the next enqueued task does
(the task's slice is `STATEROOM_JOB_SLICE_SECONDS`, 60 s; here
`SLICE_SECONDS`, so a deletion of any size is resumed several times). Every
transaction the job opens is timed at the connection: from the switch out of
autocommit to the switch back after COMMIT.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from .generate import Catalogue, create_deletion_session
from .scale import Scale
from .timing import Sample

ROWS_PER_S_TARGET = 20_000
LONGEST_TX_TARGET_MS = 1000.0
BATCH_SIZE = 1000
SLICE_SECONDS = 5.0


@contextmanager
def transaction_timer(connection) -> Iterator[list[float]]:
    """Durations of every outermost transaction on `connection` while inside."""
    durations: list[float] = []
    original = connection.set_autocommit
    opened: list[float] = []

    def set_autocommit(autocommit: bool, *args, **kwargs):
        if not autocommit:
            opened.append(time.perf_counter())
            return original(autocommit, *args, **kwargs)
        result = original(autocommit, *args, **kwargs)
        if opened:
            durations.append(time.perf_counter() - opened.pop())
        return result

    connection.set_autocommit = set_autocommit
    try:
        yield durations
    finally:
        del connection.set_autocommit


def content_left(url: str, tenant_pk: int, session_id: str) -> dict[str, int]:
    """What still holds content, counted with plain SQL (not the job's own queries)."""
    from .database import connect, tenant_tx
    from .generate import tables

    t = tables()
    runs = f"SELECT id FROM {t['run']} WHERE tenant_id = %(t)s AND session_id = %(s)s"
    with connect(url) as conn, tenant_tx(conn, tenant_pk) as cur:
        s = cur.execute(
            f"SELECT id FROM {t['session']} WHERE tenant_id = %s AND session_id = %s",
            [tenant_pk, session_id],
        ).fetchone()[0]
        p = {"t": tenant_pk, "s": s}
        one = lambda sql: cur.execute(sql, p).fetchone()[0]  # noqa: E731
        return {
            "session_items": one(
                f"SELECT count(*) FROM {t['item']} WHERE tenant_id = %(t)s AND session_id = %(s)s"
            ),
            "run_event_payloads": one(
                f"SELECT count(*) FROM {t['run_event']} WHERE tenant_id = %(t)s"
                f" AND run_id IN ({runs}) AND payload IS NOT NULL"
            ),
            "checkpoint_bodies": one(
                f"SELECT count(*) FROM {t['checkpoint']} WHERE tenant_id = %(t)s AND task_id IN"
                f" (SELECT task_id FROM {t['run']} WHERE tenant_id = %(t)s AND session_id = %(s)s)"
                " AND state IS NOT NULL"
            ),
            "effect_payloads": one(
                f"SELECT count(*) FROM {t['effect']} WHERE tenant_id = %(t)s"
                f" AND run_id IN ({runs}) AND request IS NOT NULL"
            ),
        }


def run(url: str, scale: Scale, cat: Catalogue, log) -> dict:
    from django.db import connection

    from lifecycle_app.deletion import DeletionStore
    from stateroom.actor import Actor
    from tenancy_app.models import Tenant
    from tenancy_app.scoping import in_tenant

    tenant = Tenant.objects.get(pk=cat.tenant_pk)
    session_id = f"sess_deletion_{uuid.uuid4().hex[:6]}"
    items = scale.deletion_items or scale.timeline_items
    made = create_deletion_session(url, tenant.pk, session_id, items)
    log(f"  generated {session_id}: {made}")
    store = DeletionStore(tenant, Actor.system("bench"))
    with in_tenant(tenant):
        deletion = store.request(session_id=session_id, reason="benchmark", enqueue=False)
    with in_tenant(tenant, atomic=False), transaction_timer(connection) as tx:
        started = time.perf_counter()
        deletion, slices = _run_in_slices(store, deletion)
        elapsed = time.perf_counter() - started
    left = _left_by_owners(tenant, store, session_id, list(deletion.counts))
    left_raw = content_left(url, tenant.pk, session_id)
    rows = sum(deletion.counts.values())
    txs = Sample(tx, elapsed)
    longest_ms = max(tx) * 1000 if tx else 0.0
    result = {
        "session_id": session_id,
        "batch_size": BATCH_SIZE,
        "slice_seconds": SLICE_SECONDS,
        "slices": slices,
        "status": deletion.status,
        "planned": deletion.planned,
        "counts": deletion.counts,
        "left_after": left,
        "left_after_raw_sql": left_raw,
        "rows": rows,
        "seconds": round(elapsed, 3),
        "rows_per_s": round(rows / elapsed, 1) if elapsed else 0.0,
        "session_items_per_s": round(deletion.counts.get("session_items", 0) / (elapsed or 1), 1),
        "transactions": len(tx),
        "tx_p50_ms": round(txs.p50_ms, 2),
        "tx_p95_ms": round(txs.p95_ms, 2),
        "longest_tx_ms": round(longest_ms, 2),
        "target_rows_per_s": ROWS_PER_S_TARGET,
        "target_longest_tx_ms": LONGEST_TX_TARGET_MS,
    }
    result["met"] = (
        deletion.status == "done"
        and not any(left.values())
        and not any(left_raw.values())
        and result["rows_per_s"] >= ROWS_PER_S_TARGET
        and longest_ms <= LONGEST_TX_TARGET_MS
    )
    log(
        f"  deleted {rows} rows in {elapsed:.2f} s ({result['rows_per_s']:.0f} rows/s),"
        f" {len(tx)} transactions in {slices} slices, longest {longest_ms:.0f} ms,"
        f" status {deletion.status}"
    )
    return result


def _run_in_slices(store, deletion):
    """Run the job as the Celery task does: a slice per `run` call, each resuming the last."""
    from lifecycle_app.models import OPEN_STATUSES

    slices = 0
    while deletion.status in OPEN_STATUSES:
        slices += 1
        deletion = store.run(
            deletion_id=deletion.deletion_id, batch_size=BATCH_SIZE, time_budget=SLICE_SECONDS
        )
    return deletion, slices


def _left_by_owners(tenant, store, session_id: str, kinds: list[str]) -> dict:
    """What each owning app's store still finds of the session's content, per kind."""
    from lifecycle_app.content import Owners, resolve
    from lifecycle_app.content import content_left as owners_content_left
    from sessions_app.models import Session
    from stateroom.actor import Actor
    from tenancy_app.scoping import in_tenant

    with in_tenant(tenant):
        session = Session.objects.get(tenant=tenant, session_id=session_id)
        owners = Owners.build(tenant, Actor.system("bench"), store.now)
        return owners_content_left(owners, resolve(owners, session), kinds)
