"""Fixtures of the notification tests: a real SMTP server, channels, routed approvals,
and stand-in chat and webhook senders (their real ones are tested beside them)."""

from __future__ import annotations

import email
import email.policy
import socket
import sys
import types
from dataclasses import dataclass, field

import pytest
from aiosmtpd.controller import Controller

from approvals_app.routing import RoutingRules
from notifications_app.channels.base import Message, Sent
from notifications_app.fanout import DELIVER_MANY_TASK, DELIVER_TASK
from notifications_app.models import Notification
from notifications_app.store import NotificationStore
from outbox_app.models import OutboxMessage
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.scoping import in_tenant

from ..approvals.conftest import make_approval
from ..runs.conftest import Clock

ADMIN = Actor.system("test-admin")


# --- a real SMTP server ---------------------------------------------------------------
@dataclass
class SMTPServer:
    """What the test's SMTP server received (`messages`), and whom it refuses (`refuse`)."""

    port: int
    messages: list[email.message.Message] = field(default_factory=list)
    refuse: set[str] = field(default_factory=set)

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refuse:
            return "550 5.1.1 no such mailbox"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        self.messages.append(message)
        return "250 Message accepted"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def smtp_server(settings):
    """An SMTP server on 127.0.0.1 (a free port), and Django's SMTP backend pointed at it."""
    server = SMTPServer(port=free_port())
    controller = Controller(server, hostname="127.0.0.1", port=server.port)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = server.port
    settings.EMAIL_USE_TLS = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    yield server
    controller.stop()


def text_and_html(message: email.message.Message) -> tuple[str, str]:
    text = message.get_body(preferencelist=("plain",)).get_content()
    html = message.get_body(preferencelist=("html",)).get_content()
    return text, html


# --- stand-in senders -------------------------------------------------------------------
@dataclass
class FakeSender:
    """A sender module's `send`/`update`: records calls; `failures` raise first."""

    kind: str
    sent: list[tuple] = field(default_factory=list)
    updated: list[tuple] = field(default_factory=list)
    failures: list[Exception] = field(default_factory=list)

    def send(self, channel, notification, message: Message) -> Sent:
        if self.failures:
            raise self.failures.pop(0)
        self.sent.append((channel, notification, message))
        return Sent(external_ref={"channel": notification.address, "ts": str(len(self.sent))})

    def update(self, channel, notification, message: Message) -> None:
        self.updated.append((channel, notification, message))


@pytest.fixture
def fake_senders(monkeypatch):
    """`notifications_app.channels.slack` and `.webhook` as stand-ins (kind -> FakeSender)."""
    fakes = {}
    for kind in ("slack", "webhook"):
        fake = FakeSender(kind)
        module = types.ModuleType(f"notifications_app.channels.{kind}")
        module.send, module.update = fake.send, fake.update
        monkeypatch.setitem(sys.modules, module.__name__, module)
        fakes[kind] = fake
    return fakes


@pytest.fixture
def eager_retries(monkeypatch):
    """Eager tasks retry in-process only when errors do not propagate (a worker would wait)."""
    from notifications_app.tasks import deliver_notification

    monkeypatch.setattr(deliver_notification.app.conf, "task_eager_propagates", False)


# --- the tenant's setup -------------------------------------------------------------------
def nstore(tenant, clock=None) -> NotificationStore:
    return NotificationStore(tenant, ADMIN, **({"clock": clock} if clock else {}))


def with_email(user, address: str | None = None):
    user.email = address if address is not None else f"{user.username}@example.com"
    user.save(update_fields=["email"])
    return user


def add_channel(tenant, kind: str, name: str | None = None, **kw):
    defaults = {
        "slack": {"secret": "xoxb-test", "signing_secret": "sign"},
        "webhook": {"secret": "whsec", "config": {"url": "https://hooks.example/in"}},
    }.get(kind, {})
    with in_tenant(tenant):
        return nstore(tenant).save_channel(
            kind=kind, name=name or kind.title(), **{**defaults, **kw}
        )


def route_to(tenant, *, user_ids=(), group_ids=(), **kw):
    with in_tenant(tenant):
        return RoutingRules(tenant, ADMIN).save_rule(
            name=kw.pop("name", "ops"),
            is_default=kw.pop("is_default", True),
            user_ids=list(user_ids),
            group_ids=list(group_ids),
            **kw,
        )


def make_group(tenant, name, users, **kw):
    with in_tenant(tenant):
        return GroupStore(tenant, ADMIN).save_group(name=name, user_ids=[u.pk for u in users], **kw)


def asked(tenant, approval_id="apr-1", *, run_id="run-1", risk="medium", clock=None, **kw):
    """An approval asked (routed by the tenant's rules; its notice is not handled here)."""
    return make_approval(
        tenant, run_id=run_id, approval_id=approval_id, risk=risk, clock=clock, **kw
    )


def notifications(tenant, **filters) -> list[Notification]:
    with in_tenant(tenant):
        return list(
            Notification.objects.filter(tenant=tenant, **filters)
            .select_related("recipient", "channel")
            .order_by("id")
        )


def summary(tenant, **filters) -> set[tuple]:
    """(recipient username or None, channel kind, status) of each notification."""
    return {
        (n.recipient.username if n.recipient else None, n.channel_kind, n.status)
        for n in notifications(tenant, **filters)
    }


def delivery_batches(tenant) -> list[list]:
    """The args of each delivery job: [tenant id, [notification ids]] (one per notice)."""
    with in_tenant(tenant):
        return list(
            OutboxMessage.objects.filter(tenant=tenant, task=DELIVER_MANY_TASK)
            .order_by("id")
            .values_list("args", flat=True)
        )


def delivery_jobs(tenant) -> list[list]:
    """[tenant id, notification id] of each notification queued for delivery, whether
    its job carries it alone (`deliver_notification`) or with its notice's others."""
    with in_tenant(tenant):
        jobs = OutboxMessage.objects.filter(
            tenant=tenant, task__in=[DELIVER_TASK, DELIVER_MANY_TASK]
        )
        found = []
        for task, args in jobs.order_by("id").values_list("task", "args"):
            ids = args[1] if task == DELIVER_MANY_TASK else [args[1]]
            found += [[args[0], pk] for pk in ids]
        return found


@pytest.fixture
def clock() -> Clock:
    return Clock()
