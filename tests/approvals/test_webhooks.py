"""Decision webhooks, delivered to a real HTTP server on 127.0.0.1 (no mocked transport).

127.0.0.1 is a loopback address, which webhooks are refused unless allow-listed
(`STATEROOM_WEBHOOK_ALLOW`): these tests allow it, as a deployment would allow
a receiver inside its own network.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from approvals_app.tasks import notify_decision
from approvals_app.webhook_payloads import delivery_id, new_secret
from stateroom.actor import Actor
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore
from tenancy_app.webhooks import signed_headers

from .conftest import approval_store, make_approval


@pytest.fixture(autouse=True)
def allow_loopback(settings):
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1/32"]


def verify_signature(secret: str, headers: dict, body: bytes) -> bool:
    """What a receiver does, with the Standard Webhooks library."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        Webhook(secret).verify(body, lowered)
    except WebhookVerificationError:
        return False
    return True


class Receiver:
    """A local webhook endpoint answering with scripted statuses (the last one repeats)."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = list(statuses)
        self.requests: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                status = (
                    receiver.statuses.pop(0) if len(receiver.statuses) > 1 else receiver.statuses[0]
                )
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/stateroom"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def webhook_token(tenant, url: str) -> tuple[RuntimeToken, Actor]:
    with in_tenant(tenant):
        token, _ = TenancyStore(tenant, Actor.system("test")).create_token(
            name="hooked", webhook_url=url
        )
    return token, Actor("token", str(token.pk), "token:hooked")


@pytest.fixture
def eager_retries(monkeypatch):
    """Eager tasks retry in-process only when errors do not propagate (a worker would wait)."""
    monkeypatch.setattr(notify_decision.app.conf, "task_eager_propagates", False)


def test_decision_is_posted_signed_and_retried_after_a_500(
    tenant_a, operator_a, django_capture_on_commit_callbacks, eager_retries
):
    with Receiver([500, 200]) as receiver:
        token, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, approval_id="apr-1", actor=asker)
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            with in_tenant(tenant_a):
                approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                    approval_id="apr-1", decision="reject", reason="wrong customer"
                )
    assert len(callbacks) == 2  # the outbox publishes the webhook job; the end is counted (metrics)
    assert len(receiver.requests) == 2  # the 500, then the retry that got 200
    assert notify_decision.retry_backoff == 2 and notify_decision.max_retries == 8
    assert notify_decision.retry_jitter is True
    deliveries = {headers["webhook-id"] for headers, _ in receiver.requests}
    assert deliveries == {delivery_id(tenant_a.pk, "apr-1", "rejected")}
    headers, body = receiver.requests[-1]
    assert headers["X-Stateroom-Event"] == "approval.decided"
    assert headers["Content-Type"] == "application/json"
    assert token.webhook_secret.startswith("whsec_")
    assert verify_signature(token.webhook_secret, headers, body)
    assert not verify_signature(new_secret(), headers, body)
    assert not verify_signature(token.webhook_secret, headers, body + b" ")
    payload = json.loads(body)
    assert payload["event"] == "approval.decided"
    approval = payload["approval"]
    assert (approval["approval_id"], approval["run_id"], approval["status"]) == (
        "apr-1",
        "run-1",
        "rejected",
    )
    assert (approval["decided_by"], approval["decision_reason"]) == ("otto", "wrong customer")


def test_a_response_is_posted_as_responded(
    tenant_a, operator_a, django_capture_on_commit_callbacks
):
    """Answered instead of run is its own outcome, with its own delivery id."""
    with Receiver([204]) as receiver:
        token, asker = webhook_token(tenant_a, receiver.url)
        make_approval(
            tenant_a, approval_id="apr-1", actor=asker, allowed_decisions=["approve", "respond"]
        )
        with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="respond", response="Refund queued for review."
            )
    [(headers, body)] = receiver.requests
    approval = json.loads(body)["approval"]
    assert (approval["status"], approval["decision"], approval["response"]) == (
        "responded",
        "respond",
        "Refund queued for review.",
    )
    assert headers["webhook-id"] == delivery_id(tenant_a.pk, "apr-1", "responded")
    assert verify_signature(token.webhook_secret, headers, body)


def test_retries_stop_after_eight(tenant_a, operator_a, eager_retries):
    with Receiver([503]) as receiver:
        _, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, approval_id="apr-1", actor=asker)
        with in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="approve"
            )
        result = notify_decision.delay(tenant_a.pk, "apr-1")
    assert result.failed()
    assert len(receiver.requests) == 1 + 8


def test_expiry_is_posted_too(tenant_a, django_capture_on_commit_callbacks):
    with Receiver([204]) as receiver:
        token, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, approval_id="apr-1", actor=asker)
        with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
            approval_store(tenant_a, Actor.system("sweep")).expire(approval_id="apr-1")
    [(headers, body)] = receiver.requests
    assert json.loads(body)["approval"]["status"] == "expired"
    assert verify_signature(token.webhook_secret, headers, body)


def test_a_void_is_posted_too_after_the_approval(
    tenant_a, operator_a, django_capture_on_commit_callbacks
):
    from actions_app.approvals import ApprovalActions

    with Receiver([204]) as receiver:
        token, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, approval_id="apr-1", actor=asker)
        with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="approve"
            )
        with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
            ApprovalActions(tenant_a, asker).void(
                approval_id="apr-1",
                reason_code="tool_changed",
                reason="the tool changed",
                details={"tool": "send_refund", "old": {}, "new": {"type": "object"}},
            )
    approved, voided = receiver.requests
    assert json.loads(approved[1])["approval"]["status"] == "approved"
    body = json.loads(voided[1])["approval"]
    assert (body["status"], body["void_reason_code"], body["voided_by"]) == (
        "voided",
        "tool_changed",
        "token:hooked",
    )
    # Each outcome is its own delivery.
    assert voided[0]["webhook-id"] == delivery_id(tenant_a.pk, "apr-1", "voided")
    assert voided[0]["webhook-id"] != approved[0]["webhook-id"]
    assert verify_signature(token.webhook_secret, voided[0], voided[1])


def test_a_refusing_receiver_is_not_retried(
    tenant_a, operator_a, django_capture_on_commit_callbacks
):
    with Receiver([410]) as receiver:
        _, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, approval_id="apr-1", actor=asker)
        with django_capture_on_commit_callbacks(execute=True), in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="approve"
            )
    assert len(receiver.requests) == 1


def test_nothing_is_sent_without_a_webhook_or_when_the_decision_fails(
    tenant_a, operator_a, make_token, django_capture_on_commit_callbacks
):
    make_token(tenant_a, name="plain")
    with in_tenant(tenant_a):
        plain = RuntimeToken.objects.get(tenant=tenant_a, name="plain")
    make_approval(tenant_a, approval_id="apr-1", actor=Actor("token", str(plain.pk), "token:plain"))
    with Receiver([200]) as receiver:
        _, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, run_id="run-2", approval_id="apr-2", actor=asker)
        store = approval_store(tenant_a, Actor.for_user(operator_a))
        with django_capture_on_commit_callbacks(execute=True) as callbacks, in_tenant(tenant_a):
            store.decide(approval_id="apr-1", decision="approve")
            with pytest.raises(Exception, match="reason"):
                store.decide(approval_id="apr-2", decision="reject")
    # apr-1's end is counted (stateroom.metrics); no job for either.
    assert [c.__qualname__ for c in callbacks] == ["ApprovalBase._count_end.<locals>.<lambda>"]
    assert receiver.requests == []


def test_task_is_idempotent_about_what_it_sends(tenant_a, operator_a):
    with Receiver([200]) as receiver:
        _, asker = webhook_token(tenant_a, receiver.url)
        make_approval(tenant_a, approval_id="apr-1", actor=asker)
        assert notify_decision.delay(tenant_a.pk, "apr-1").get() == "pending"
        with in_tenant(tenant_a):
            approval_store(tenant_a, Actor.for_user(operator_a)).decide(
                approval_id="apr-1", decision="approve"
            )
        assert notify_decision.delay(tenant_a.pk, "apr-1").get() == "delivered"
        assert notify_decision.delay(tenant_a.pk, "apr-1").get() == "delivered"
        assert notify_decision.delay(tenant_a.pk, "nope").get() == "no-approval"
    first, second = (json.loads(body) for _, body in receiver.requests)
    assert first == second
    assert len({h["webhook-id"] for h, _ in receiver.requests}) == 1


def test_signatures_are_standard_webhooks_for_new_and_older_secrets():
    from datetime import UTC, datetime

    body = '{"event":"approval.decided"}'
    when = datetime.now(UTC)
    secret = new_secret()
    headers = signed_headers(secret, "msg-1", body, when)
    assert headers["webhook-id"] == "msg-1"
    assert headers["webhook-timestamp"] == str(int(when.timestamp()))
    assert headers["webhook-signature"].startswith("v1,")
    assert verify_signature(secret, headers, body.encode())
    assert not verify_signature(secret, {**headers, "webhook-id": "msg-2"}, body.encode())
    # A secret from before (sr_…): the receiver's key is whsec_ + base64 of its bytes.
    import base64

    older = "sr_" + "x" * 43
    as_standard = "whsec_" + base64.b64encode(older.encode()).decode()
    assert verify_signature(as_standard, signed_headers(older, "m", body, when), body.encode())
