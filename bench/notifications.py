"""Draining approval notices to email (issue 34), section `notifications`.

Measured only when named (`--only notifications`): it needs aiosmtpd (the dev
extra). A fresh tenant of the bench database with an email channel, a group
of 3 members with email addresses whose preferences say email (only) for
high-risk calls, and a rule asking that group of every call. `count`
approvals (1,000 at the default scale) are asked through
`ApprovalStore.request` inside `in_tenant(tenant, atomic=False)`; with Celery
not eager the notice jobs wait in the outbox (`enqueue(..., right_away=False)`).

Then the outbox is drained as Celery workers would, `workers` processes (one
per core by default, as Celery's prefork pool; `--workers 1`: in the bench's
process), each forked with Django's connections closed first so it opens its
own: each claims waiting rows in batches of 100 as the relay claims them
(`FOR UPDATE SKIP LOCKED`, marked sent: no two workers take a row) and runs
each row's Celery task (`Task.apply`): the notice fan-outs while any wait
(`approvals_app.tasks.approval_notice`: who hears it, one notification row per
recipient and ONE delivery job with their ids), else the delivery jobs they
enqueued (`notifications_app.tasks.deliver_notifications`: each reads its
approval once, builds the messages and sends them over one connection with
Django's SMTP backend, records them in one UPDATE). A worker stops when it
can claim nothing and no worker holds a batch (which could queue more). The
publish after commit is off for the drain (`STATEROOM_OUTBOX_PUBLISH_ON_COMMIT`)
so the delivery jobs wait for it too. The SMTP server is aiosmtpd on
127.0.0.1 (a free port) in a process of its own (`bench.smtp_sink`): it
counts the messages it accepted and how many were distinct.

Reported: the notifications per second over the whole drain (wall time;
target ≥ 200/s, from the workers' start to the last one's end), the wall
seconds until the last fan-out ended and after it, the busy milliseconds per
notice and per email summed over the workers, the outbox rows each worker ran
(none twice), the messages the server received (must be recipients times
approvals, all distinct), the notice outbox rows per request and what is left
waiting (nothing).
"""

from __future__ import annotations

import multiprocessing
import os
import time
import traceback
import uuid
from dataclasses import dataclass

from .smtp_sink import smtp_server

TARGET_RATE = 200.0
BATCH = 100
POLL_S = 0.02  # a worker that found nothing while another holds a batch looks again
DRAIN_TIMEOUT_S = 3600.0


def _email_everyone(tenant, user_ids: list[int]) -> None:
    """An email channel, and each member's preference: email only, for high risk."""
    from notifications_app.store import NotificationStore
    from stateroom.actor import Actor
    from tenancy_app.scoping import in_tenant

    store = NotificationStore(tenant, Actor.system("bench"))
    with in_tenant(tenant):
        store.save_channel(kind="email", name="Mail")
        for user_id in user_ids:
            store.save_preference(
                user_id=user_id, by_risk={"high": ["email"]}, quiet_start=None, quiet_end=None
            )


def _claim(tenant, task: str) -> list:
    """Up to BATCH waiting jobs of `task`, marked sent, as the relay claims them."""
    from django.utils import timezone

    from outbox_app.models import OutboxMessage
    from tenancy_app.scoping import in_tenant

    with in_tenant(tenant):
        rows = list(
            OutboxMessage.objects.select_for_update(skip_locked=True)
            .filter(tenant=tenant, task=task, sent_at__isnull=True)
            .order_by("pk")[:BATCH]
        )
        OutboxMessage.objects.filter(tenant=tenant, pk__in=[r.pk for r in rows]).update(
            sent_at=timezone.now()
        )
    return rows


def _claim_next(tenant) -> tuple[str, list]:
    """A worker's next batch: notices while any wait (the fan-out first, as the one-process
    drain always ran it), else delivery jobs; ("", []) when nothing can be claimed."""
    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from notifications_app.fanout import DELIVER_MANY_TASK, DELIVER_TASK

    for task in (APPROVAL_NOTICE_TASK, DELIVER_MANY_TASK, DELIVER_TASK):
        if rows := _claim(tenant, task):
            return task, rows
    return "", []


@dataclass
class Shared:
    """What the drain's workers share: how many are holding or running a batch (one that
    may queue more jobs), and when the last fan-out batch finished (`time.monotonic`)."""

    busy: object  # multiprocessing.Value("i")
    fanned_at: object  # multiprocessing.Value("d")


def _run_batch(app, task: str, rows: list, tally: dict, shared: Shared) -> None:
    """Run the claimed rows' Celery tasks here (`Task.apply`), as a worker would; tally them."""
    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from notifications_app.fanout import DELIVER_MANY_TASK

    if not rows:
        return
    began = time.monotonic()
    for row in rows:
        app.tasks[row.task].apply(
            args=row.args,
            kwargs=row.kwargs,
            task_id=f"outbox-{row.tenant_id}-{row.pk}",
            throw=True,
        )
    ended = time.monotonic()
    tally["ran"].extend(row.pk for row in rows)
    if task == APPROVAL_NOTICE_TASK:
        tally["notices"] += len(rows)
        tally["fanout_busy_s"] += ended - began
        with shared.fanned_at.get_lock():
            shared.fanned_at.value = max(shared.fanned_at.value, ended)
        return
    tally["delivery_jobs"] += len(rows)
    tally["deliveries"] += sum(len(r.args[1]) if task == DELIVER_MANY_TASK else 1 for r in rows)
    tally["delivery_busy_s"] += ended - began


def work(tenant, shared: Shared) -> dict:
    """One worker's drain: claim a batch (`FOR UPDATE SKIP LOCKED`: no two workers take a
    row), run it, again; when nothing can be claimed and no worker holds a batch (which
    could queue more), stop. Its tally: the outbox rows it ran, jobs, seconds busy."""
    from stateroom.celery import app

    tally = {"ran": [], "notices": 0, "delivery_jobs": 0, "deliveries": 0}
    tally |= {"fanout_busy_s": 0.0, "delivery_busy_s": 0.0}
    while True:
        with shared.busy.get_lock():
            shared.busy.value += 1
        try:
            task, rows = _claim_next(tenant)
            _run_batch(app, task, rows, tally, shared)
        finally:
            with shared.busy.get_lock():
                shared.busy.value -= 1
        if rows:
            continue
        with shared.busy.get_lock():
            if shared.busy.value == 0:
                return tally | {"finished_at": time.monotonic()}
        time.sleep(POLL_S)


def _smtp_settings(port: int) -> dict:
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "127.0.0.1",
        "EMAIL_PORT": port,
        "EMAIL_USE_TLS": False,
        "EMAIL_USE_SSL": False,
        "EMAIL_HOST_USER": "",
        "EMAIL_HOST_PASSWORD": "",
        "STATEROOM_OUTBOX_PUBLISH_ON_COMMIT": False,
    }


def _worker(tenant, port: int, shared: Shared, barrier, results, index: int) -> None:
    """A forked drain worker: its own database connection (opened before the start, as a
    running worker has it), the same loop; its tally, or its traceback, to `results`."""
    from django.db import connection, connections
    from django.test import override_settings

    try:
        with override_settings(**_smtp_settings(port)):
            connection.ensure_connection()
            barrier.wait()
            results.put((index, work(tenant, shared), None))
    except BaseException:
        results.put((index, None, traceback.format_exc()))
    finally:
        connections.close_all()


def _in_processes(tenant, port: int, shared: Shared, workers: int) -> tuple[float, list]:
    """Fork `workers` drain processes, start them together: (start time, their tallies)."""
    from django.db import connections

    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(workers + 1), context.Queue()
    connections.close_all()  # no worker may share the bench's connection
    processes = [
        context.Process(
            target=_worker,
            args=(tenant, port, shared, barrier, results, n),
            name=f"bench-drain-{n}",
        )
        for n in range(workers)
    ]
    for process in processes:
        process.start()
    barrier.wait(timeout=60)
    started = time.monotonic()
    outcomes = sorted(results.get(timeout=DRAIN_TIMEOUT_S) for _ in processes)
    for process in processes:
        process.join(30)
    failed = [error for _, _, error in outcomes if error]
    if failed:
        raise RuntimeError("a drain worker failed:\n" + failed[0])
    return started, [tally for _, tally, _ in outcomes]


def drain(tenant, port: int, workers: int = 1) -> dict:
    """Drain the waiting notices and the deliveries they queue with `workers` processes
    (1: in this process); wall time over the whole drain, the fan-out's end in it."""
    from django.test import override_settings

    from stateroom.celery import app

    app.loader.import_default_modules()
    context = multiprocessing.get_context("fork")
    shared = Shared(context.Value("i", 0), context.Value("d", 0.0))
    if workers == 1:
        with override_settings(**_smtp_settings(port)):
            started = time.monotonic()
            tallies = [work(tenant, shared)]
    else:
        started, tallies = _in_processes(tenant, port, shared, workers)
    finished = max(t["finished_at"] for t in tallies)
    fanned = shared.fanned_at.value or started
    ran = [pk for t in tallies for pk in t["ran"]]
    total = {k: sum(t[k] for t in tallies) for k in ("notices", "delivery_jobs", "deliveries")}
    busy = {k: sum(t[k] for t in tallies) for k in ("fanout_busy_s", "delivery_busy_s")}
    return total | {
        "workers": workers,
        "jobs_run": len(ran),
        "jobs_run_twice": len(ran) - len(set(ran)),
        "jobs_per_worker": [len(t["ran"]) for t in tallies],
        "fanout_ms_per_notice": 1000 * busy["fanout_busy_s"] / max(1, total["notices"]),
        "delivery_ms_per_email": 1000 * busy["delivery_busy_s"] / max(1, total["deliveries"]),
        "fanout_s": fanned - started,
        "delivery_s": finished - fanned,
        "drain_s": finished - started,
    }


def _counts(tenant) -> dict:
    """Notice rows, rows still waiting, and the notifications by status."""
    from django.db.models import Count

    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from notifications_app.models import Notification
    from outbox_app.models import OutboxMessage
    from tenancy_app.scoping import in_tenant

    with in_tenant(tenant):
        outbox = OutboxMessage.objects.filter(tenant=tenant)
        statuses = Notification.objects.filter(tenant=tenant).values("status")
        return {
            "notice_rows": outbox.filter(task=APPROVAL_NOTICE_TASK).count(),
            "waiting": outbox.filter(sent_at__isnull=True).count(),
            "notifications": {row["status"]: row["n"] for row in statuses.annotate(n=Count("id"))},
        }


def measure(count: int, workers: int | None = None) -> dict:
    """Ask `count` routed approvals, drain their notices to a local SMTP server (its own
    process) with `workers` processes (default: one per core); the numbers."""
    from .routing import RECIPIENTS, _asker, _route_to_a_group, _runs, _tenant

    workers = workers or os.cpu_count() or 1
    tag = uuid.uuid4().hex[:8]
    tenant = _tenant(f"bench-notify-{tag}")
    _email_everyone(tenant, _route_to_a_group(tenant, f"bench-notify-{tag}"))
    ask = _asker(tenant, _runs(tenant, count, "notify"))
    started = time.perf_counter()
    for i in range(count):
        ask(i)
    asked_s = time.perf_counter() - started
    before = _counts(tenant)
    with smtp_server() as server:
        drained = drain(tenant, server.port, workers)
        received = (server.messages, server.recipients, server.distinct)
    after = _counts(tenant)
    expected = count * RECIPIENTS
    rate = received[0] / drained["drain_s"] if drained["drain_s"] else 0.0
    right = received == (expected, expected, expected) and drained["jobs_run_twice"] == 0
    return {
        "count": count,
        "recipients": RECIPIENTS,
        "asked_s": round(asked_s, 2),
        "notice_rows_per_request": round(before["notice_rows"] / count, 3),
        "waiting_before": before["waiting"],
        **{k: v if not isinstance(v, float) else round(v, 2) for k, v in drained.items()},
        "messages_received": received[0],
        "recipients_received": received[1],
        "distinct_messages_received": received[2],
        "expected_messages": expected,
        "notifications": after["notifications"],
        "waiting_after": after["waiting"],
        "per_s": round(rate, 1),
        "target_per_s": TARGET_RATE,
        "met": right and after["waiting"] == 0 and rate >= TARGET_RATE,
    }


def run(url: str, scale, cat, log, workers: int | None = None) -> dict:
    """The bench section: 1,000 approvals at the default scale (`op_iterations`)."""
    count = max(50, scale.op_iterations)
    workers = workers or os.cpu_count() or 1
    log(
        f"notifications: asking {count} routed approvals, draining their notices to SMTP"
        f" with {workers} worker process(es)"
    )
    return measure(count, workers)


def render(result: dict) -> list[str]:
    """The section's Markdown lines (bench/report.py)."""
    if not result or "per_s" not in result:
        return []
    verdict = "met" if result["met"] else "**MISSED**"
    workers = result.get("workers", 1)
    how = "in the bench's process" if workers == 1 else f"{workers} forked worker processes"
    return [
        f"**Draining approval notices to email** ({result['count']} routed approvals,"
        f" {result['recipients']} recipients each, {how}; aiosmtpd on 127.0.0.1 in a"
        " process of its own):",
        "",
        "| phase | jobs | wall seconds | busy ms per job's unit |",
        "|---|---:|---:|---:|",
        f"| fan-out (`approval_notice`), until the last one ended | {result['notices']}"
        f" notices | {result['fanout_s']:.2f} | {result['fanout_ms_per_notice']:.1f} a notice |",
        f"| delivery (`deliver_notifications`, SMTP), after it | {result['deliveries']} emails"
        f" in {result['delivery_jobs']} jobs | {result['delivery_s']:.2f}"
        f" | {result['delivery_ms_per_email']:.1f} an email |",
        f"| whole drain | {result['messages_received']} messages received"
        f" (of {result['expected_messages']}) | {result['drain_s']:.2f}"
        f" | **{result['per_s']:.0f} notifications/s** |",
        "",
        f"Outbox jobs per worker: {', '.join(map(str, result['jobs_per_worker']))}; run twice:"
        f" {result['jobs_run_twice']}; distinct messages received:"
        f" {result['distinct_messages_received']}. Notice outbox rows per request:"
        f" {result['notice_rows_per_request']:g}; left waiting after the drain:"
        f" {result['waiting_after']}. Target ≥ {result['target_per_s']:.0f}"
        f" notifications/s, every message received once: {verdict}.",
        "",
    ]
