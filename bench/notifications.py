"""Draining approval notices to email (issue 34), section `notifications`.

Measured only when named (`--only notifications`): it needs aiosmtpd (the dev
extra). A fresh tenant of the bench database with an email channel, a group
of 3 members with email addresses whose preferences say email (only) for
high-risk calls, and a rule asking that group of every call. `count`
approvals (1,000 at the default scale) are asked through
`ApprovalStore.request` inside `in_tenant(tenant, atomic=False)`; with Celery
not eager the notice jobs wait in the outbox (`enqueue(..., right_away=False)`).

Then the outbox is drained as a worker would, in this process: the waiting
rows are claimed in batches of 100 as the relay claims them (`FOR UPDATE SKIP
LOCKED`, marked sent) and each row's Celery task is run (`Task.apply`): first
the notice fan-out (`approvals_app.tasks.approval_notice`: who hears it, one
notification row per recipient and ONE delivery job with their ids), then the
delivery jobs it enqueued (`notifications_app.tasks.deliver_notifications`:
each reads its approval once, builds the messages and sends them over one
connection with Django's SMTP backend, records them in one UPDATE), until
nothing waits. The
publish after commit is off for the drain (`STATEROOM_OUTBOX_PUBLISH_ON_COMMIT`)
so the delivery jobs wait for it too. The SMTP server is aiosmtpd on
127.0.0.1 (a free port), in a thread of this process: it counts the messages
it accepted.

Reported: the notifications per second over the whole drain (wall time;
target ≥ 200/s), the fan-out and delivery phases' seconds, the messages the
server received (must be recipients times approvals), the notice outbox rows
per request and what is left waiting (nothing).
"""

from __future__ import annotations

import socket
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

TARGET_RATE = 200.0
BATCH = 100


@dataclass
class Counting:
    """An aiosmtpd handler that counts what it accepted (it runs in the server's thread)."""

    messages: int = 0
    recipients: int = 0

    async def handle_DATA(self, server, session, envelope):
        self.messages += 1
        self.recipients += len(envelope.rcpt_tos)
        return "250 Message accepted"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def smtp_server():
    """aiosmtpd on 127.0.0.1, a free port: (handler, port)."""
    from aiosmtpd.controller import Controller

    handler, port = Counting(), _free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield handler, port
    finally:
        controller.stop()


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


def run_waiting(tenant, *tasks: str) -> tuple[int, int]:
    """Run every waiting job of `tasks` in this process, as a worker would: how many jobs,
    and how many notifications they carried (a delivery job: its notice's; else 1)."""
    from notifications_app.fanout import DELIVER_MANY_TASK
    from stateroom.celery import app

    app.loader.import_default_modules()
    jobs = carried = 0
    for task in tasks:
        while rows := _claim(tenant, task):
            for row in rows:
                app.tasks[row.task].apply(
                    args=row.args,
                    kwargs=row.kwargs,
                    task_id=f"outbox-{row.tenant_id}-{row.pk}",
                    throw=True,
                )
                jobs += 1
                carried += len(row.args[1]) if task == DELIVER_MANY_TASK else 1
    return jobs, carried


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


def drain(tenant, port: int) -> dict:
    """Fan the waiting notices out, then deliver what they queued; the phases' seconds."""
    from django.test import override_settings

    from approvals_app.notices import APPROVAL_NOTICE_TASK
    from notifications_app.fanout import DELIVER_MANY_TASK, DELIVER_TASK

    with override_settings(**_smtp_settings(port)):
        started = time.perf_counter()
        notices, _ = run_waiting(tenant, APPROVAL_NOTICE_TASK)
        fanned = time.perf_counter()
        jobs, deliveries = run_waiting(tenant, DELIVER_MANY_TASK, DELIVER_TASK)
        finished = time.perf_counter()
    return {
        "notices": notices,
        "delivery_jobs": jobs,
        "deliveries": deliveries,
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


def measure(count: int) -> dict:
    """Ask `count` routed approvals, drain their notices to a local SMTP server; the numbers."""
    from .routing import RECIPIENTS, _asker, _route_to_a_group, _runs, _tenant

    tag = uuid.uuid4().hex[:8]
    tenant = _tenant(f"bench-notify-{tag}")
    _email_everyone(tenant, _route_to_a_group(tenant, f"bench-notify-{tag}"))
    ask = _asker(tenant, _runs(tenant, count, "notify"))
    started = time.perf_counter()
    for i in range(count):
        ask(i)
    asked_s = time.perf_counter() - started
    before = _counts(tenant)
    with smtp_server() as (server, port):
        drained = drain(tenant, port)
    after = _counts(tenant)
    expected = count * RECIPIENTS
    rate = server.messages / drained["drain_s"] if drained["drain_s"] else 0.0
    return {
        "count": count,
        "recipients": RECIPIENTS,
        "asked_s": round(asked_s, 2),
        "notice_rows_per_request": round(before["notice_rows"] / count, 3),
        "waiting_before": before["waiting"],
        **{k: v if isinstance(v, int) else round(v, 2) for k, v in drained.items()},
        "messages_received": server.messages,
        "recipients_received": server.recipients,
        "expected_messages": expected,
        "notifications": after["notifications"],
        "waiting_after": after["waiting"],
        "per_s": round(rate, 1),
        "fanout_per_s": round(drained["notices"] / drained["fanout_s"], 1),
        "delivery_per_s": round(drained["deliveries"] / drained["delivery_s"], 1),
        "target_per_s": TARGET_RATE,
        "met": server.messages == expected and after["waiting"] == 0 and rate >= TARGET_RATE,
    }


def run(url: str, scale, cat, log) -> dict:
    """The bench section: 1,000 approvals at the default scale (`op_iterations`)."""
    count = max(50, scale.op_iterations)
    log(f"notifications: asking {count} routed approvals, draining their notices to SMTP")
    return measure(count)


def render(result: dict) -> list[str]:
    """The section's Markdown lines (bench/report.py)."""
    if not result or "per_s" not in result:
        return []
    verdict = "met" if result["met"] else "**MISSED**"
    return [
        f"**Draining approval notices to email** ({result['count']} routed approvals, "
        f"{result['recipients']} recipients each, in process, aiosmtpd on 127.0.0.1):",
        "",
        "| phase | jobs | seconds | per second |",
        "|---|---:|---:|---:|",
        f"| fan-out (`approval_notice`) | {result['notices']} | {result['fanout_s']:.2f}"
        f" | {result['fanout_per_s']:.0f} |",
        f"| delivery (`deliver_notifications`, SMTP) | {result['deliveries']} emails in"
        f" {result.get('delivery_jobs', result['deliveries'])} jobs"
        f" | {result['delivery_s']:.2f} | {result['delivery_per_s']:.0f} |",
        f"| whole drain | {result['messages_received']} messages received"
        f" (of {result['expected_messages']}) | {result['drain_s']:.2f}"
        f" | **{result['per_s']:.0f} notifications/s** |",
        "",
        f"Notice outbox rows per request: {result['notice_rows_per_request']:g}; left waiting"
        f" after the drain: {result['waiting_after']}. Target ≥ {result['target_per_s']:.0f}"
        f" notifications/s, every message received: {verdict}.",
        "",
    ]
