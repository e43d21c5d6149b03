"""The Slack channel: the message sent (Block Kit, buttons only when a click may decide),
Slack's errors, and a click taken end to end through the fake Slack."""

from __future__ import annotations

import json
import time

import pytest

from notifications_app.channels import slack
from notifications_app.channels.base import Message, RetryableSendError, SendRefused
from notifications_app.models import Notification
from runs_app.store import RunStateStore
from stateroom.actor import Actor
from tenancy_app.models import Role
from tenancy_app.scoping import in_tenant

from .chat import (
    approval_row,
    buttons,
    delivered,
    events,
    fake_slack_fixture,  # noqa: F401 (the fixture `fake_slack`)
    hook_url,
    message_of,
    notification,
    pending,
    sent,
    slack_channel,
)

BASE = "https://stateroom.example"


@pytest.mark.django_db
def test_send_posts_block_kit_with_an_approve_button_bound_to_the_call(
    fake_slack, tenant_a, operator_a
):
    channel = slack_channel(tenant_a)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    message = message_of(tenant_a, approval, BASE)

    result = slack.send(channel, row, message)

    (call,) = fake_slack.calls_of("chat.postMessage")
    assert call["channel"] == "U0OTTO"
    ((where, ts),) = fake_slack.messages
    assert result.external_ref == {"channel": where, "ts": ts}
    assert where == "D0OTTO"  # the bot's DM with the user
    blocks = call["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": "Approval needed: send_refund", "emoji": False},
    }
    text = json.dumps(blocks)
    assert "Refund 12.00 EUR to ops@example.com" in text
    assert "*to*\\nops@example.com" in text and "*amount*\\n1200" in text
    found = buttons(blocks)
    # Approve and Reject as the runtime allows them; the link is always there.
    assert set(found) == {"stateroom_approve", "stateroom_reject", "stateroom_open"}
    assert found["stateroom_reject"]["value"] == found["stateroom_approve"]["value"]
    assert (found["stateroom_approve"]["style"], found["stateroom_reject"]["style"]) == (
        "primary",
        "danger",
    )
    assert found["stateroom_open"]["url"] == message.url
    assert json.loads(found["stateroom_approve"]["value"]) == {
        "approval_id": "apr-1",
        "digest": message.digest,
        "run_version": message.run_version,
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change",
    [
        {"recipient_can_decide": False},
        {"status": "approved"},
        {"outcome": "Rejected by ada in Stateroom."},
        {"allowed_decisions": ["edit", "respond"]},
    ],
)
def test_no_decision_button_when_a_click_cannot_decide(fake_slack, tenant_a, operator_a, change):
    channel = slack_channel(tenant_a)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    slack.send(channel, row, message_of(tenant_a, approval, BASE, **change))
    (call,) = fake_slack.calls_of("chat.postMessage")
    assert set(buttons(call["blocks"])) == {"stateroom_open"}


def test_what_a_runtime_wrote_cannot_mention_or_link_in_slack():
    message = message_of_plain(summary="<!channel> pay <https://evil.example|here> & now")
    text = json.dumps(slack.blocks(message))
    assert "<!channel>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt; pay &lt;https://evil.example|here&gt; &amp; now" in text


def message_of_plain(**kw):
    return Message(
        kind="asked",
        tenant_slug="acme",
        approval_id="apr-1",
        title="Approval needed",
        text="t",
        url=f"{BASE}/t/acme/approvals/apr-1/",
        **kw,
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("answer", "error"),
    [
        ((429, {"ok": False, "error": "ratelimited"}), RetryableSendError),
        ((500, {"ok": False, "error": "internal_error"}), RetryableSendError),
        ((200, {"ok": False, "error": "invalid_auth"}), SendRefused),
        ((200, {"ok": False, "error": "channel_not_found"}), SendRefused),
    ],
)
def test_slack_errors_are_retryable_or_final(fake_slack, tenant_a, operator_a, answer, error):
    channel = slack_channel(tenant_a)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    fake_slack.fail_next.append(answer)
    with pytest.raises(error):
        slack.send(channel, row, message_of(tenant_a, approval, BASE))


@pytest.mark.django_db
def test_a_wrong_token_is_refused_and_an_unreachable_slack_retried(
    fake_slack, settings, tenant_a, operator_a
):
    channel = slack_channel(tenant_a)
    channel.secret = "xoxb-wrong"
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    message = message_of(tenant_a, approval, BASE)
    with pytest.raises(SendRefused, match="invalid_auth"):
        slack.send(channel, row, message)
    fake_slack.stop()
    channel.secret = "xoxb-test-token"
    with pytest.raises(RetryableSendError):
        slack.send(channel, row, message)


@pytest.mark.django_db
def test_a_private_slack_api_url_is_refused_unless_allowed(settings, tenant_a, operator_a):
    settings.STATEROOM_SLACK_API_URL = "http://127.0.0.1:9/api/"
    settings.STATEROOM_WEBHOOK_ALLOW = []
    channel = slack_channel(tenant_a)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    with pytest.raises(SendRefused, match="not a public address"):
        slack.send(channel, row, message_of(tenant_a, approval, BASE))


@pytest.mark.django_db
def test_update_rewrites_the_message_with_the_outcome_and_no_buttons(
    fake_slack, tenant_a, operator_a
):
    channel = slack_channel(tenant_a)
    approval = pending(tenant_a)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    message = message_of(tenant_a, approval, BASE)
    sent(tenant_a, row, slack.send(channel, row, message).external_ref)

    decided = message_of(
        tenant_a, approval, BASE, status="approved", outcome="Approved by ada in Stateroom."
    )
    slack.update(channel, row, decided)

    (call,) = fake_slack.calls_of("chat.update")
    assert (call["channel"], call["ts"]) == (row.external_ref["channel"], row.external_ref["ts"])
    assert set(buttons(call["blocks"])) == {"stateroom_open"}
    assert "Approved by ada in Stateroom." in json.dumps(call["blocks"])


# --- a click, end to end ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_approve_click_of_a_linked_operator_decides_as_them(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, row, _message, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    assert "stateroom_approve" in buttons(fake_slack.messages[where]["blocks"])

    response = fake_slack.click(
        hook_url(live_server, tenant_a, channel),
        user_id="U0OTTO",
        message=where,
        action_id="stateroom_approve",
    )

    assert response.status_code == 200
    assert response.json()["text"] == "Approved by otto in Slack."
    approval = approval_row(tenant_a)
    assert (approval.status, approval.decision) == ("approved", "approve")
    assert approval.decided_by == "otto (Slack)"
    assert approval.decided_by_id == f"user:{operator_a.pk}"
    (event,) = events(tenant_a, "approval.approved")
    assert (event.actor_type, event.actor_id, event.actor_label) == (
        "user",
        str(operator_a.pk),
        "otto (Slack)",
    )
    # The message now shows the outcome, without buttons but the link.
    (update,) = fake_slack.calls_of("chat.update")
    assert (update["channel"], update["ts"]) == where
    shown = fake_slack.messages[where]
    assert set(buttons(shown["blocks"])) == {"stateroom_open"}
    assert "Approved by otto in Slack." in json.dumps(shown["blocks"])
    with in_tenant(tenant_a):
        acted = Notification.objects.get(pk=row.pk)
    assert (acted.action, acted.acted_by) == ("approve", "otto (Slack)")
    assert acted.acted_at is not None
    assert not events(tenant_a, "chat.action_refused")


def refused(tenant, why: str):
    (event,) = events(tenant, "chat.action_refused")
    assert event.after["why"] == why
    assert approval_row(tenant).status == "pending" or why == "already_decided"
    return event


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("change", "code"),
    [({"secret": "not-the-signing-secret"}, "bad_signature"), ({"stale": True}, "stale_signature")],
)
def test_a_bad_or_stale_signature_is_401_and_nothing_else(
    live_server, fake_slack, tenant_a, operator_a, change, code
):
    channel, _row, _message, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    kwargs = {"secret": change.get("secret")}
    if change.get("stale"):
        kwargs["timestamp"] = int(time.time()) - 6 * 60
    response = fake_slack.click(
        hook_url(live_server, tenant_a, channel),
        user_id="U0OTTO",
        message=where,
        action_id="stateroom_approve",
        **kwargs,
    )
    assert response.status_code == 401
    assert response.content == b""
    assert approval_row(tenant_a).status == "pending"
    assert not fake_slack.calls_of("chat.update") and not fake_slack.responses
    (event,) = events(tenant_a, "access.denied")
    assert (event.after["status"], event.after["code"]) == (401, code)


def click_as(live_server, fake_slack, tenant, channel, where, user_id, action="approve", **kw):
    response = fake_slack.click(
        hook_url(live_server, tenant, channel),
        user_id=user_id,
        message=where,
        action_id=f"stateroom_{action}",
        **kw,
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["response_type"], body["replace_original"]) == ("ephemeral", False)
    return body["text"]


@pytest.mark.django_db(transaction=True)
def test_an_unlinked_slack_user_is_refused_audited_and_told(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    text = click_as(live_server, fake_slack, tenant_a, channel, where, "U0STRANGER")
    assert "not linked" in text
    event = refused(tenant_a, "unlinked_user")
    assert event.after["external_user_id"] == "U0STRANGER"
    assert event.actor_type == "system"
    # Slack shows the user why: an ephemeral reply to the click's response_url.
    assert fake_slack.responses == [
        {"response_type": "ephemeral", "replace_original": False, "text": text}
    ]
    assert not fake_slack.calls_of("chat.update")


@pytest.mark.django_db(transaction=True)
def test_a_linked_user_without_the_role_is_refused(live_server, fake_slack, tenant_a, make_user):
    sue = make_user("sue", tenant_a, Role.SUPPORT)
    channel, _row, _m, where = delivered(
        fake_slack, tenant_a, sue, live_server.url, external_user_id="U0SUE"
    )
    text = click_as(live_server, fake_slack, tenant_a, channel, where, "U0SUE")
    assert "role" in text
    event = refused(tenant_a, "no_permission")
    assert (event.actor_type, event.actor_label) == ("user", "sue (Slack)")


@pytest.mark.django_db(transaction=True)
def test_a_decision_the_runtime_did_not_allow_is_refused(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, message, where = delivered(
        fake_slack, tenant_a, operator_a, live_server.url, allowed_decisions=["reject", "edit"]
    )
    assert "stateroom_approve" not in buttons(fake_slack.messages[where]["blocks"])
    value = json.dumps(
        {"approval_id": "apr-1", "digest": message.digest, "run_version": message.run_version}
    )
    text = click_as(live_server, fake_slack, tenant_a, channel, where, "U0OTTO", value=value)
    assert "cannot honour 'approve'" in text
    refused(tenant_a, "decision_not_allowed")


@pytest.mark.django_db(transaction=True)
def test_an_edit_is_not_given_from_chat(live_server, fake_slack, tenant_a, operator_a):
    channel, _row, message, where = delivered(
        fake_slack, tenant_a, operator_a, live_server.url, allowed_decisions=["approve", "edit"]
    )
    value = json.dumps(
        {"approval_id": "apr-1", "digest": message.digest, "run_version": message.run_version}
    )
    text = click_as(
        live_server, fake_slack, tenant_a, channel, where, "U0OTTO", "edit", value=value
    )
    assert "Only approve and reject" in text
    refused(tenant_a, "decision_not_offered")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("risk", "allowed", "shown"),
    [
        ("high", ["approve", "reject"], {"stateroom_approve", "stateroom_reject"}),
        ("critical", ["approve", "reject"], {"stateroom_approve", "stateroom_reject"}),
        ("low", ["reject", "edit"], {"stateroom_reject"}),
        ("low", ["approve", "edit"], {"stateroom_approve"}),
    ],
)
def test_approve_for_every_risk_and_reject_as_allowed(
    fake_slack, tenant_a, operator_a, risk, allowed, shown
):
    channel = slack_channel(tenant_a)
    approval = pending(tenant_a, risk=risk)
    row = notification(tenant_a, channel, approval, operator_a, "U0OTTO")
    slack.send(channel, row, message_of(tenant_a, approval, BASE, allowed_decisions=allowed))
    (call,) = fake_slack.calls_of("chat.postMessage")
    assert set(buttons(call["blocks"])) == shown | {"stateroom_open"}


@pytest.mark.django_db(transaction=True)
def test_a_second_click_is_refused_and_changes_nothing(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    shown_before = dict(fake_slack.messages[where])
    first = click_as(live_server, fake_slack, tenant_a, channel, where, "U0OTTO")
    assert first == "Approved by otto in Slack."
    # The same (old) message clicked again, as a second browser tab would.
    fake_slack.messages[where] = shown_before
    second = click_as(live_server, fake_slack, tenant_a, channel, where, "U0OTTO")
    assert second == "Already approved by otto (Slack): nothing was changed."
    refused(tenant_a, "already_decided")
    assert len(events(tenant_a, "approval.approved")) == 1


@pytest.mark.django_db(transaction=True)
def test_a_click_on_a_call_whose_run_moved_is_refused(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, message, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    with in_tenant(tenant_a):
        RunStateStore(tenant_a, Actor.system("test")).compare_and_set(
            run_id="run-1", expected_version=message.run_version, changes={"token_used": 50}
        )
    text = click_as(live_server, fake_slack, tenant_a, channel, where, "U0OTTO")
    assert "changed since this message was sent" in text
    event = refused(tenant_a, "call_changed")
    assert event.actor_label == "otto (Slack)"


@pytest.mark.django_db(transaction=True)
def test_another_tenants_channel_under_this_slug_is_404(
    live_server, fake_slack, tenant_a, tenant_b, operator_a
):
    _channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    theirs = slack_channel(tenant_b)
    for url in (
        hook_url(live_server, tenant_a, theirs),
        f"{live_server.url}/hooks/slack/no-such-tenant/{theirs.channel_id}/",
    ):
        response = fake_slack.click(
            url, user_id="U0OTTO", message=where, action_id="stateroom_approve"
        )
        assert response.status_code == 404
    assert approval_row(tenant_a).status == "pending"
    assert not events(tenant_a, "chat.action_refused")
    assert not events(tenant_b, "chat.action_refused")
