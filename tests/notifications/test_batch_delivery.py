"""A notice's notifications delivered in one job: over one SMTP connection, a refusal
final for its own message only, a retry sending only what was not sent yet."""

import smtplib

import pytest

from notifications_app.channels.base import RetryableSendError
from notifications_app.delivery import deliver_many
from notifications_app.fanout import Fanout
from notifications_app.tasks import deliver_notifications
from tenancy_app.models import Role

from .conftest import (
    add_channel,
    asked,
    delivery_batches,
    free_port,
    notifications,
    route_to,
    with_email,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def connects(monkeypatch) -> list[tuple]:
    """Each connection opened to a mail server."""
    opened = []
    real = smtplib.SMTP.connect

    def connect(self, host="localhost", port=0, source_address=None):
        opened.append((host, port))
        return real(self, host, port, source_address)

    monkeypatch.setattr(smtplib.SMTP, "connect", connect)
    return opened


@pytest.fixture
def three(tenant_a, make_user):
    people = [with_email(make_user(f"op{n}", tenant_a, Role.OPERATOR)) for n in range(3)]
    add_channel(tenant_a, "email", "Mail")
    add_channel(tenant_a, "webhook", "Hook")
    route_to(tenant_a, user_ids=[p.pk for p in people])
    return people


def test_a_notices_emails_go_over_one_connection_and_a_refusal_fails_only_its_own(
    tenant_a, three, smtp_server, connects, fake_senders, django_capture_on_commit_callbacks
):
    smtp_server.refuse.add("op1@example.com")
    asked(tenant_a, risk="high")
    with django_capture_on_commit_callbacks(execute=True):
        assert Fanout(tenant_a).handle("apr-1", "asked") == "4 queued"
    [[_, ids]] = delivery_batches(tenant_a)  # one job: three emails and the webhook post
    assert len(ids) == 4
    assert connects == [("127.0.0.1", smtp_server.port)]
    assert sorted(m["To"] for m in smtp_server.messages) == ["op0@example.com", "op2@example.com"]
    emails = {n.address: n for n in notifications(tenant_a, channel_kind="email")}
    assert (emails["op1@example.com"].status, emails["op1@example.com"].detail) == (
        "failed",
        "refused: the mail server refused op1@example.com",
    )
    assert {emails[a].status for a in ("op0@example.com", "op2@example.com")} == {"sent"}
    assert {n.attempts for n in emails.values()} == {1}
    [hook] = notifications(tenant_a, channel_kind="webhook")
    assert (hook.status, len(fake_senders["webhook"].sent)) == ("sent", 1)


def test_a_retry_sends_only_what_was_not_sent(
    tenant_a, three, smtp_server, fake_senders, eager_retries, django_capture_on_commit_callbacks
):
    fake_senders["webhook"].failures = [RetryableSendError("503")]
    asked(tenant_a, risk="high")
    with django_capture_on_commit_callbacks(execute=True):
        Fanout(tenant_a).handle("apr-1", "asked")
    assert len(smtp_server.messages) == 3  # each email once, though the job ran twice
    emails = notifications(tenant_a, channel_kind="email")
    assert {(n.status, n.attempts) for n in emails} == {("sent", 1)}
    [hook] = notifications(tenant_a, channel_kind="webhook")
    assert (hook.status, hook.attempts) == ("sent", 2)
    assert len(fake_senders["webhook"].sent) == 1
    [[_, ids]] = delivery_batches(tenant_a)
    assert deliver_notifications.apply(args=[tenant_a.pk, ids]).get() == "4 sent"
    assert len(smtp_server.messages) == 3  # delivering again sends nothing again


def test_a_mail_server_that_is_down_fails_the_whole_batch_for_a_retry(
    tenant_a, three, settings, fake_senders
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nobody listens
    settings.EMAIL_USE_TLS = False
    asked(tenant_a, risk="high")
    Fanout(tenant_a).handle("apr-1", "asked")
    [[_, ids]] = delivery_batches(tenant_a)
    with pytest.raises(RetryableSendError, match="3 to try again: the mail server: Connection"):
        deliver_many(tenant_a.pk, ids, final_attempt=False)
    emails = notifications(tenant_a, channel_kind="email")
    assert {(n.status, n.attempts) for n in emails} == {("queued", 1)}
    assert all("ConnectionRefusedError" in n.detail for n in emails)
    [hook] = notifications(tenant_a, channel_kind="webhook")
    assert hook.status == "sent"  # recorded before the job asks to be retried
