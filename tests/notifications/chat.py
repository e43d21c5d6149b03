"""Fixtures and helpers of the chat channels' tests (Slack, the signed webhook).

Built here, not through the fan-out: a channel and its chat links through
NotificationStore, an approval through the approval store, the Notification
row and the Message as the fan-out would make them.
"""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from approvals_app.models import ApprovalRequest
from approvals_app.store import ApprovalStore
from audit_app.models import AuditEvent
from notifications_app.channels import slack
from notifications_app.channels.base import Message
from notifications_app.models import Notification
from notifications_app.store import NotificationStore
from runs_app.models import Run
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant

from ..approvals.conftest import make_approval
from .fake_slack import FakeSlack

TOKEN = "xoxb-test-token"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
WEBHOOK_SECRET = "whsec_" + base64.b64encode(b"chat-bridge-secret-0123456789").decode()
ADMIN = Actor.system("test-admin")


@pytest.fixture(name="fake_slack")
def fake_slack_fixture(settings):
    fake = FakeSlack(token=TOKEN, signing_secret=SIGNING_SECRET).start()
    settings.STATEROOM_SLACK_API_URL = fake.api_url
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1"]  # the fake Slack and the receivers
    yield fake
    fake.stop()


def slack_channel(tenant, name: str = "Ops Slack"):
    with in_tenant(tenant):
        return NotificationStore(tenant, ADMIN).save_channel(
            kind="slack",
            name=name,
            config={"channel": "C0OPS"},
            secret=TOKEN,
            signing_secret=SIGNING_SECRET,
        )


def webhook_channel(tenant, url: str, name: str = "Ops bridge"):
    with in_tenant(tenant):
        return NotificationStore(tenant, ADMIN).save_channel(
            kind="webhook", name=name, config={"url": url}, secret=WEBHOOK_SECRET
        )


def link(tenant, channel, external_user_id: str, user) -> None:
    with in_tenant(tenant):
        NotificationStore(tenant, ADMIN).link(
            channel_id=channel.channel_id, external_user_id=external_user_id, user_id=user.pk
        )


def notification(tenant, channel, approval, recipient, address: str) -> Notification:
    with in_tenant(tenant):
        return Notification.objects.create(
            tenant=tenant,
            approval_id=approval.approval_id,
            kind="asked",
            recipient=recipient,
            channel=channel,
            channel_kind=channel.kind,
            address=address,
            created_at=timezone.now(),
        )


def sent(tenant, row: Notification, external_ref) -> None:
    """What delivery records of a sent message."""
    with in_tenant(tenant):
        Notification.objects.filter(pk=row.pk).update(
            status="sent", sent_at=timezone.now(), external_ref=external_ref
        )
    row.external_ref = external_ref


def message_of(tenant, approval: ApprovalRequest, base_url: str, **kw) -> Message:
    """The message the fan-out makes of an `asked` notice, for one who may decide."""
    with in_tenant(tenant):
        digest = ApprovalStore(tenant, ADMIN).digest(approval)
        version = Run.objects.filter(tenant=tenant, pk=approval.run_id).get().version
    fields = {
        "kind": "asked",
        "tenant_slug": tenant.slug,
        "approval_id": approval.approval_id,
        "title": f"Approval needed: {approval.tool_name}",
        "text": f"{approval.tool_name} ({approval.risk} risk) waits for a decision.",
        "url": f"{base_url}/t/{tenant.slug}/approvals/{approval.approval_id}/",
        "tool_name": approval.tool_name,
        "risk": approval.risk,
        "summary": approval.summary or "Refund 12.00 EUR to ops@example.com",
        "key_arguments": [("to", "ops@example.com"), ("amount", "1200")],
        "expires_at": approval.expires_at,
        "digest": digest,
        "run_version": version,
        "allowed_decisions": list(approval.allowed_decisions),
        "recipient_can_decide": True,
    }
    return Message(**(fields | kw))


def pending(tenant, approval_id: str = "apr-1", **kw) -> ApprovalRequest:
    kw.setdefault("summary", "Refund 12.00 EUR to ops@example.com")
    return make_approval(tenant, approval_id=approval_id, **kw)


def approval_row(tenant, approval_id: str = "apr-1") -> ApprovalRequest:
    with in_tenant(tenant):
        return ApprovalRequest.objects.get(tenant=tenant, approval_id=approval_id)


def events(tenant, action: str) -> list[AuditEvent]:
    with in_tenant(tenant):
        return list(AuditEvent.objects.filter(tenant=tenant, action=action).order_by("seq"))


def buttons(blocks) -> dict[str, dict]:
    """The buttons of a Slack message's actions blocks, by action_id."""
    return {
        element["action_id"]: element
        for block in blocks
        if block["type"] == "actions"
        for element in block["elements"]
    }


def delivered(fake_slack, tenant, user, base_url, external_user_id="U0OTTO", **approval_kw):
    """A Slack channel, `user` linked as `external_user_id`, a pending approval, and its
    message delivered to them: (channel, notification, message, (where, ts))."""
    channel = slack_channel(tenant)
    link(tenant, channel, external_user_id, user)
    approval = pending(tenant, **approval_kw)
    row = notification(tenant, channel, approval, user, external_user_id)
    message = message_of(tenant, approval, base_url)
    ref = slack.send(channel, row, message).external_ref
    sent(tenant, row, ref)
    return channel, row, message, (ref["channel"], ref["ts"])


def hook_url(live_server, tenant, channel) -> str:
    return f"{live_server.url}/hooks/slack/{tenant.slug}/{channel.channel_id}/"


class Receiver:
    """A webhook receiver on 127.0.0.1 recording each request (path, headers, body)."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.requests.append((self.path, dict(self.headers.items()), body))
                data = json.dumps({"ok": True}).encode()
                self.send_response(receiver.status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(name="receiver")
def receiver_fixture():
    found = Receiver()
    yield found
    found.stop()
