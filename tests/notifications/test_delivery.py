"""Delivering notifications: by email through a real SMTP server, retried, refused, once."""

import pytest
from django.test import Client

from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent
from notifications_app.channels.base import RetryableSendError
from notifications_app.delivery import deliver
from notifications_app.fanout import Fanout
from notifications_app.tasks import MAX_RETRIES, deliver_notification
from notifications_app.testsend import send_test
from stateroom.actor import Actor
from stateroom.errors import NotFound, Unprocessable
from tenancy_app.models import Membership, Role
from tenancy_app.scoping import in_tenant

from ..approvals.conftest import ARGS, approval_store
from ..runs.conftest import make_run
from .conftest import (
    add_channel,
    asked,
    free_port,
    notifications,
    route_to,
    text_and_html,
    with_email,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def olga(make_user, tenant_a):
    return with_email(make_user("olga", tenant_a, Role.OPERATOR))


@pytest.fixture
def routed(tenant_a, olga):
    add_channel(tenant_a, "email", "Mail")
    route_to(tenant_a, user_ids=[olga.pk])


def ask_through_the_api(client: Client, **body):
    body = {
        "expected_version": 2,
        "tool_name": "payments.refund",
        "arguments": ARGS,
        "risk": "high",
        "approval_id": "apr-1",
        "summary": "Refund 1200 to ops",
        "key_arguments": ["amount"],
        **body,
    }
    return client.post("/api/v1/runs/run-1/approvals", body, content_type="application/json")


@pytest.mark.django_db(transaction=True)
def test_the_notice_of_an_approval_asked_under_a_non_atomic_scope_runs_after_the_commit(
    tenant_a, routed, smtp_server
):
    """Eager jobs run right after the commit, still inside the caller's
    `in_tenant(atomic=False)` scope (a hot path, a worker that opts in): the notice
    opens its own transactions, as in a worker, instead of failing the caller."""
    make_run(tenant_a, "running", run_id="run-1")
    with in_tenant(tenant_a, atomic=False):
        ApprovalStore(tenant_a, Actor.system("runtime")).request(
            run_id="run-1",
            expected_version=2,
            tool_name="payments.refund",
            arguments=ARGS,
            risk="high",
            approval_id="apr-1",
        )
    assert [m["To"] for m in smtp_server.messages] == ["olga@example.com"]


def test_an_approval_asked_through_the_api_arrives_by_email_with_its_link(
    tenant_a, api_a, routed, smtp_server, settings, django_capture_on_commit_callbacks
):
    settings.STATEROOM_CONSOLE_URL = "https://stateroom.example"
    make_run(tenant_a, "running", run_id="run-1")
    with django_capture_on_commit_callbacks(execute=True):
        assert ask_through_the_api(api_a).status_code == 201
    [received] = smtp_server.messages
    assert received["To"] == "olga@example.com" == received["X-Envelope-To"]
    assert received["From"] == "stateroom@localhost"
    assert received["Subject"] == "Approval needed: payments.refund (high)"
    text, html = text_and_html(received)
    link = "https://stateroom.example/t/acme/approvals/apr-1/"
    assert f"Open: {link}" in text and "amount: 1200" in text
    assert f'<a href="{link}">' in html and "<code>1200</code>" in html
    assert "ops@example.com" not in text + html  # not a key argument
    [email] = notifications(tenant_a, channel_kind="email")
    assert (email.status, email.attempts, email.detail) == (
        "sent",
        1,
        "accepted by the mail server",
    )
    assert email.sent_at is not None
    [console] = notifications(tenant_a, channel_kind="console")
    assert console.status == "sent"


def test_a_refused_recipient_fails_at_once(
    tenant_a, routed, smtp_server, django_capture_on_commit_callbacks
):
    smtp_server.refuse.add("olga@example.com")
    asked(tenant_a, risk="high")
    with django_capture_on_commit_callbacks(execute=True):
        Fanout(tenant_a).handle("apr-1", "asked")
    [email] = notifications(tenant_a, channel_kind="email")
    assert (email.status, email.attempts) == ("failed", 1)
    assert email.detail == "refused: the mail server refused olga@example.com"
    assert smtp_server.messages == []


def test_a_mail_server_that_is_down_is_retried_then_given_up(
    tenant_a, routed, settings, eager_retries, django_capture_on_commit_callbacks
):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nobody listens
    asked(tenant_a, risk="high")
    with django_capture_on_commit_callbacks(execute=True):
        Fanout(tenant_a).handle("apr-1", "asked")
    [email] = notifications(tenant_a, channel_kind="email")
    assert (email.status, email.attempts) == ("failed", MAX_RETRIES + 1)
    assert "ConnectionRefusedError" in email.detail
    assert deliver_notification.max_retries == MAX_RETRIES == 8
    assert deliver_notification.retry_backoff == 2 and deliver_notification.retry_jitter


def test_a_failed_attempt_is_retried_until_it_is_sent(
    tenant_a, olga, fake_senders, eager_retries, django_capture_on_commit_callbacks
):
    add_channel(tenant_a, "webhook")
    route_to(tenant_a, user_ids=[olga.pk])
    fake_senders["webhook"].failures = [RetryableSendError("503"), RetryableSendError("timeout")]
    asked(tenant_a, risk="low")
    with django_capture_on_commit_callbacks(execute=True):
        Fanout(tenant_a).handle("apr-1", "asked")
    [hook] = notifications(tenant_a, channel_kind="webhook")
    assert (hook.status, hook.attempts) == ("sent", 3)
    assert hook.external_ref == {"channel": "", "ts": "1"}
    [(_, _, message)] = fake_senders["webhook"].sent
    assert message.title == "Approval needed: send_refund (low)"


def test_delivering_again_sends_nothing_again(
    tenant_a, routed, smtp_server, django_capture_on_commit_callbacks
):
    asked(tenant_a, risk="high")
    with django_capture_on_commit_callbacks(execute=True):
        Fanout(tenant_a).handle("apr-1", "asked")
    [email] = notifications(tenant_a, channel_kind="email")
    assert deliver(tenant_a.pk, email.pk) == "sent"
    assert deliver_notification.apply(args=[tenant_a.pk, email.pk]).get() == "sent"
    assert len(smtp_server.messages) == 1
    assert notifications(tenant_a, channel_kind="email")[0].attempts == 1


def test_what_is_no_longer_worth_sending_is_skipped(
    tenant_a, routed, olga, operator_a, smtp_server
):
    asked(tenant_a, risk="high")
    asked(tenant_a, "apr-2", run_id="run-2", risk="high")
    Fanout(tenant_a).handle("apr-1", "asked")  # the test's transaction: delivery waits
    Fanout(tenant_a).handle("apr-2", "asked")
    with in_tenant(tenant_a):
        approval_store(tenant_a, Actor.for_user(operator_a)).decide(
            approval_id="apr-1", decision="reject", reason="no"
        )
    first, second = notifications(tenant_a, channel_kind="email")
    assert deliver(tenant_a.pk, first.pk) == "skipped"
    with in_tenant(tenant_a):
        Membership.objects.filter(tenant=tenant_a, user=olga).delete()
    assert deliver(tenant_a.pk, second.pk) == "skipped"
    first, second = notifications(tenant_a, channel_kind="email")
    assert (first.status, first.detail) == ("skipped", "the approval is rejected")
    assert (second.status, second.detail) == ("skipped", "the recipient is no longer a member")
    assert smtp_server.messages == []


def test_an_admin_tests_the_email_channel(
    tenant_a, admin_a, operator_a, smtp_server, django_capture_on_commit_callbacks
):
    with_email(admin_a)
    with_email(operator_a)
    mail = add_channel(tenant_a, "email", "Mail")
    actor = Actor.for_user(admin_a)
    with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
        notification_id = send_test(tenant_a, actor, mail.channel_id, admin_a.pk)
    [received] = smtp_server.messages
    assert received["Subject"] == "Stateroom test message (Mail)"
    assert "http://127.0.0.1:8000/t/acme/" in text_and_html(received)[0]
    [test] = notifications(tenant_a, kind="test")
    assert (test.pk, test.status, test.approval_id, test.recipient_id) == (
        notification_id,
        "sent",
        "",
        admin_a.pk,
    )
    with in_tenant(tenant_a):
        [event] = AuditEvent.objects.filter(tenant=tenant_a, action="channel.tested")
    assert (event.target_id, event.after) == (
        mail.channel_id,
        {"user_id": admin_a.pk, "kind": "email"},
    )
    with pytest.raises(Unprocessable), in_tenant(tenant_a):
        send_test(tenant_a, actor, mail.channel_id, operator_a.pk)  # not an admin
    with pytest.raises(NotFound), in_tenant(tenant_a):
        send_test(tenant_a, actor, "chn_unknown", admin_a.pk)


def test_another_tenants_channel_is_not_found(tenant_a, tenant_b, admin_a, admin_b):
    mail_b = add_channel(tenant_b, "email", "Mail")
    with pytest.raises(NotFound), in_tenant(tenant_a):
        send_test(tenant_a, Actor.for_user(admin_a), mail_b.channel_id, admin_a.pk)
