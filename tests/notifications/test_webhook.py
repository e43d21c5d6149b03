"""The signed-webhook channel: what it POSTs (verified with the Standard Webhooks library),
where it may not POST, and the signed actions it takes back."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from django.test import Client
from standardwebhooks import Webhook

from notifications_app.channels import webhook
from notifications_app.channels.base import SendRefused
from notifications_app.models import Notification
from tenancy_app.scoping import in_tenant
from tenancy_app.webhooks import signed_headers

from .chat import (
    WEBHOOK_SECRET,
    approval_row,
    events,
    link,
    message_of,
    notification,
    pending,
    receiver_fixture,  # noqa: F401 (the fixture `receiver`)
    webhook_channel,
)

BASE = "https://stateroom.example"


@pytest.mark.django_db
def test_delivery_is_signed_and_carries_the_message_and_its_actions(
    settings, receiver, tenant_a, operator_a
):
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1"]
    channel = webhook_channel(tenant_a, receiver.url)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "mm-otto")
    message = message_of(tenant_a, approval, BASE)

    webhook.send(channel, row, message)

    ((path, headers, body),) = receiver.requests
    assert path == "/hook"
    data = Webhook(WEBHOOK_SECRET).verify(body, headers)
    assert headers["X-Stateroom-Event"] == "approval.notice"
    assert data["event"] == "approval.notice"
    assert data["recipient"] == "mm-otto"
    assert data["message"]["approval_id"] == "apr-1"
    assert data["message"]["key_arguments"] == [["to", "ops@example.com"], ["amount", "1200"]]
    assert data["actions"] == {
        "open": message.url,
        "decide": {
            "url": f"{BASE}/hooks/webhook/acme/{channel.channel_id}/",
            "decisions": ["approve", "reject"],
            "approval_id": "apr-1",
            "digest": message.digest,
            "run_version": message.run_version,
        },
    }
    # Signed with another secret, it does not verify.
    with pytest.raises(Exception, match="signature"):
        Webhook("whsec_" + "A" * 32).verify(body, headers)


@pytest.mark.django_db
def test_no_decide_action_for_one_who_cannot_decide(settings, receiver, tenant_a, operator_a):
    settings.STATEROOM_WEBHOOK_ALLOW = ["127.0.0.1"]
    channel = webhook_channel(tenant_a, receiver.url)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "mm-otto")
    webhook.send(channel, row, message_of(tenant_a, approval, BASE, recipient_can_decide=False))
    data = json.loads(receiver.requests[0][2])
    assert data["actions"] == {"open": f"{BASE}/t/acme/approvals/apr-1/"}


@pytest.mark.django_db
def test_a_private_address_is_refused_without_the_allow_list(
    settings, receiver, tenant_a, operator_a
):
    settings.STATEROOM_WEBHOOK_ALLOW = []
    channel = webhook_channel(tenant_a, receiver.url)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "mm-otto")
    with pytest.raises(SendRefused, match="not a public address"):
        webhook.send(channel, row, message_of(tenant_a, approval, BASE))
    assert receiver.requests == []


# --- actions back -----------------------------------------------------------------


def signed_post(url: str, data: dict, secret: str = WEBHOOK_SECRET):
    body = json.dumps(data)
    headers = signed_headers(secret, uuid.uuid4().hex, body, datetime.now(UTC))
    return Client().post(url, data=body, content_type="application/json", headers=headers)


def action(message, **kw) -> dict:
    return {
        "approval_id": message.approval_id,
        "decision": "approve",
        "digest": message.digest,
        "run_version": message.run_version,
        "user": "mm-otto",
    } | kw


@pytest.fixture
def bridge(tenant_a, operator_a):
    """A webhook channel with otto linked as `mm-otto`, and a pending approval's message."""
    channel = webhook_channel(tenant_a, "https://hooks.example/stateroom")
    link(tenant_a, channel, "mm-otto", operator_a)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "mm-otto")
    url = f"/hooks/webhook/{tenant_a.slug}/{channel.channel_id}/"
    return channel, row, message_of(tenant_a, approval, BASE), url


@pytest.mark.django_db
def test_a_signed_action_of_a_linked_operator_decides(bridge, tenant_a, operator_a):
    _channel, row, message, url = bridge
    response = signed_post(url, action(message))
    assert response.status_code == 200
    assert response.json() == {
        "ok": True,
        "text": "Approved by otto in Ops bridge.",
        "status": "approved",
    }
    approval = approval_row(tenant_a)
    assert (approval.status, approval.decided_by) == ("approved", "otto (Ops bridge)")
    (event,) = events(tenant_a, "approval.approved")
    assert (event.actor_id, event.actor_label) == (str(operator_a.pk), "otto (Ops bridge)")
    with in_tenant(tenant_a):
        acted = Notification.objects.get(pk=row.pk)
    assert (acted.action, acted.acted_by) == ("approve", "otto (Ops bridge)")


@pytest.mark.django_db
def test_a_reject_with_its_reason_decides(bridge, tenant_a):
    _channel, _row, message, url = bridge
    response = signed_post(url, action(message, decision="reject", reason="Wrong customer."))
    assert response.json()["ok"] is True
    approval = approval_row(tenant_a)
    assert (approval.status, approval.decision_reason) == ("rejected", "Wrong customer.")


@pytest.mark.django_db
@pytest.mark.parametrize("secret", ["whsec_" + "B" * 40, None])
def test_a_badly_signed_or_unsigned_action_is_401(bridge, tenant_a, secret):
    _channel, _row, message, url = bridge
    if secret is None:
        response = Client().post(
            url, data=json.dumps(action(message)), content_type="application/json"
        )
    else:
        response = signed_post(url, action(message), secret=secret)
    assert response.status_code == 401
    assert response.content == b""
    assert approval_row(tenant_a).status == "pending"
    (event,) = events(tenant_a, "access.denied")
    assert (event.after["status"], event.after["code"]) == (401, "bad_signature")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"user": "mm-stranger"}, "unlinked_user"),
        ({"decision": "reject"}, "reason_required"),
        ({"decision": "respond"}, "decision_not_offered"),
        ({"run_version": 99}, "call_changed"),
        ({"digest": None}, "unbound"),
    ],
)
def test_refused_actions_are_audited_and_answered(bridge, tenant_a, change, why):
    _channel, _row, message, url = bridge
    response = signed_post(url, action(message, **change))
    assert response.status_code == 200
    body = response.json()
    assert (body["ok"], body["why"]) == (False, why)
    (event,) = events(tenant_a, "chat.action_refused")
    assert event.after["why"] == why
    assert approval_row(tenant_a).status == "pending"


@pytest.mark.django_db
def test_another_tenants_webhook_channel_under_this_slug_is_404(bridge, tenant_a, tenant_b):
    channel, _row, message, _url = bridge
    theirs = webhook_channel(tenant_b, "https://hooks.example/globex")
    response = signed_post(f"/hooks/webhook/{tenant_a.slug}/{theirs.channel_id}/", action(message))
    assert response.status_code == 404
    # Nor is a Slack path a way into a webhook channel.
    response = signed_post(f"/hooks/slack/{tenant_a.slug}/{channel.channel_id}/", action(message))
    assert response.status_code == 404
    assert approval_row(tenant_a).status == "pending"
