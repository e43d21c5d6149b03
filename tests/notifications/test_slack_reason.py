"""A Slack decision that needs a reason (a rejection; any decision of a high or critical
call): the click opens a modal (views.open), its signed view_submission decides with
the reason written, or shows why not in the modal; every refusal audited."""

from __future__ import annotations

import json

import pytest

from approvals_app.store import MAX_DECISION_REASON_LENGTH, ApprovalStore
from notifications_app.models import Notification
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant

from .chat import (
    approval_row,
    buttons,
    delivered,
    events,
    fake_slack_fixture,  # noqa: F401 (the fixture `fake_slack`)
    hook_url,
)

REASON = "The customer was refunded by hand yesterday."


def click(live_server, fake_slack, tenant, channel, where, action, user_id="U0OTTO"):
    return fake_slack.click(
        hook_url(live_server, tenant, channel),
        user_id=user_id,
        message=where,
        action_id=f"stateroom_{action}",
    )


def modal_opened(fake_slack) -> dict:
    (call,) = fake_slack.calls_of("views.open")
    assert call["trigger_id"] == "1.2.3"  # the click's
    (view,) = fake_slack.views
    return view


def submit(live_server, fake_slack, tenant, channel, reason, **kw):
    return fake_slack.submit(
        hook_url(live_server, tenant, channel),
        user_id=kw.pop("user_id", "U0OTTO"),
        reason=reason,
        **kw,
    )


@pytest.mark.django_db(transaction=True)
def test_a_reject_click_asks_the_reason_then_rejects_as_the_linked_member(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, row, message, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)

    response = click(live_server, fake_slack, tenant_a, channel, where, "reject")

    # Nothing decided yet: the modal asks for the reason, bound to the call and the message.
    assert (response.status_code, response.content) == (200, b"")
    assert approval_row(tenant_a).status == "pending"
    assert not events(tenant_a, "chat.action_refused")
    view = modal_opened(fake_slack)
    assert view["callback_id"] == "stateroom_decide"
    assert json.loads(view["private_metadata"]) == {
        "approval_id": "apr-1",
        "digest": message.digest,
        "run_version": message.run_version,
        "decision": "reject",
        "channel": where[0],
        "ts": where[1],
        "response_url": f"{fake_slack.base}response/{where[1]}",
        "url": message.url,
    }
    (field,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert field["block_id"] == "stateroom_reason"
    assert field["label"]["text"] == "Reason"
    assert field.get("optional", False) is False
    assert field["element"] == {
        "type": "plain_text_input",
        "action_id": "reason",
        "multiline": True,
        "max_length": MAX_DECISION_REASON_LENGTH,
    }
    # The modal shows what is decided: the message's content, without its buttons.
    assert "Refund 12.00 EUR to ops@example.com" in json.dumps(view["blocks"])
    assert not [b for b in view["blocks"] if b["type"] == "actions"]

    response = submit(live_server, fake_slack, tenant_a, channel, REASON)

    # The modal closes: 200 with an empty body.
    assert (response.status_code, response.content) == (200, b"")
    approval = approval_row(tenant_a)
    assert (approval.status, approval.decision) == ("rejected", "reject")
    assert approval.decision_reason == REASON
    assert (approval.decided_by, approval.decided_by_id) == (
        "otto (Slack)",
        f"user:{operator_a.pk}",
    )
    (event,) = events(tenant_a, "approval.rejected")
    assert (event.actor_type, event.actor_id, event.actor_label) == (
        "user",
        str(operator_a.pk),
        "otto (Slack)",
    )
    assert event.after["decision"] == "reject"  # the reason is kept on the approval, not here
    # The message shows the outcome: its content stays, the buttons go but the link.
    (update,) = fake_slack.calls_of("chat.update")
    assert (update["channel"], update["ts"]) == where
    shown = fake_slack.messages[where]
    assert shown["text"] == "Rejected by otto in Slack."
    assert set(buttons(shown["blocks"])) == {"stateroom_open"}
    assert buttons(shown["blocks"])["stateroom_open"]["url"] == message.url
    text = json.dumps(shown["blocks"])
    assert "Approval needed: send_refund" in text and "Refund 12.00 EUR" in text
    assert "Rejected by otto in Slack." in text and '"input"' not in text
    # The member is told, as after a click; their notification records the action.
    assert fake_slack.responses == [
        {"response_type": "ephemeral", "replace_original": False, "text": shown["text"]}
    ]
    with in_tenant(tenant_a):
        acted = Notification.objects.get(pk=row.pk)
    assert (acted.action, acted.acted_by) == ("reject", "otto (Slack)")
    assert not events(tenant_a, "chat.action_refused")


@pytest.mark.django_db(transaction=True)
def test_a_high_risk_approve_asks_the_reason_and_approves_with_it(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, _m, where = delivered(
        fake_slack, tenant_a, operator_a, live_server.url, risk="high"
    )
    assert "stateroom_approve" in buttons(fake_slack.messages[where]["blocks"])

    response = click(live_server, fake_slack, tenant_a, channel, where, "approve")

    assert (response.status_code, response.content) == (200, b"")
    assert approval_row(tenant_a).status == "pending"
    view = modal_opened(fake_slack)
    assert json.loads(view["private_metadata"])["decision"] == "approve"
    assert view["submit"]["text"] == "Approve"

    response = submit(live_server, fake_slack, tenant_a, channel, "Checked with finance.")

    assert (response.status_code, response.content) == (200, b"")
    approval = approval_row(tenant_a)
    assert (approval.status, approval.decision, approval.decision_reason) == (
        "approved",
        "approve",
        "Checked with finance.",
    )
    assert approval.decided_by == "otto (Slack)"
    assert fake_slack.messages[where]["text"] == "Approved by otto in Slack."


@pytest.mark.django_db(transaction=True)
def test_a_low_risk_approve_is_still_one_click(live_server, fake_slack, tenant_a, operator_a):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    response = click(live_server, fake_slack, tenant_a, channel, where, "approve")
    assert response.json()["text"] == "Approved by otto in Slack."
    assert approval_row(tenant_a).status == "approved"
    assert not fake_slack.calls_of("views.open")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("reason", "why", "text"),
    [
        (None, "reason_required", "This decision needs a reason."),
        ("   \n ", "reason_required", "This decision needs a reason."),
        (
            "x" * (MAX_DECISION_REASON_LENGTH + 1),
            "reason_invalid",
            f"The reason: at most {MAX_DECISION_REASON_LENGTH} characters.",
        ),
    ],
)
def test_a_missing_or_too_long_reason_is_refused_in_the_modal(
    live_server, fake_slack, tenant_a, operator_a, reason, why, text
):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    click(live_server, fake_slack, tenant_a, channel, where, "reject")

    response = submit(live_server, fake_slack, tenant_a, channel, reason)

    assert response.status_code == 200
    assert response.json() == {"response_action": "errors", "errors": {"stateroom_reason": text}}
    assert approval_row(tenant_a).status == "pending"
    (event,) = events(tenant_a, "chat.action_refused")
    assert (event.after["why"], event.after["decision"]) == (why, "reject")
    assert event.actor_label == "otto (Slack)"
    assert not fake_slack.calls_of("chat.update") and not fake_slack.responses


@pytest.mark.django_db(transaction=True)
def test_a_submission_after_someone_else_decided_is_refused_in_the_modal(
    live_server, fake_slack, tenant_a, operator_a, admin_a
):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    click(live_server, fake_slack, tenant_a, channel, where, "reject")
    # Meanwhile the admin approves it in the console.
    admin = Actor("user", str(admin_a.pk), admin_a.get_username(), "r1")
    with in_tenant(tenant_a):
        ApprovalStore(tenant_a, admin).decide(approval_id="apr-1", decision="approve")

    response = submit(live_server, fake_slack, tenant_a, channel, REASON)

    text = f"Already approved by {admin_a.get_username()}: nothing was changed."
    assert response.json() == {"response_action": "errors", "errors": {"stateroom_reason": text}}
    approval = approval_row(tenant_a)
    assert (approval.status, approval.decided_by) == ("approved", admin_a.get_username())
    (event,) = events(tenant_a, "chat.action_refused")
    assert (event.after["why"], event.target_id) == ("already_decided", "apr-1")
    assert event.actor_label == "otto (Slack)"
    assert not events(tenant_a, "approval.rejected")
    assert not fake_slack.calls_of("chat.update")


@pytest.mark.django_db(transaction=True)
def test_a_forged_submission_is_401_and_nothing_else(live_server, fake_slack, tenant_a, operator_a):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    click(live_server, fake_slack, tenant_a, channel, where, "reject")

    response = submit(
        live_server, fake_slack, tenant_a, channel, REASON, secret="not-the-signing-secret"
    )

    assert (response.status_code, response.content) == (401, b"")
    assert approval_row(tenant_a).status == "pending"
    assert not events(tenant_a, "chat.action_refused")
    (event,) = events(tenant_a, "access.denied")
    assert (event.after["status"], event.after["code"]) == (401, "bad_signature")
    assert not fake_slack.calls_of("chat.update")


@pytest.mark.django_db(transaction=True)
def test_a_click_that_may_not_decide_is_refused_before_any_modal(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    response = click(live_server, fake_slack, tenant_a, channel, where, "reject", "U0STRANGER")
    assert "not linked" in response.json()["text"]
    assert not fake_slack.calls_of("views.open")
    (event,) = events(tenant_a, "chat.action_refused")
    assert (event.after["why"], event.after["decision"]) == ("unlinked_user", "reject")


@pytest.mark.django_db(transaction=True)
def test_a_modal_slack_will_not_open_is_told_and_decides_nothing(
    live_server, fake_slack, tenant_a, operator_a
):
    channel, _row, _m, where = delivered(fake_slack, tenant_a, operator_a, live_server.url)
    fake_slack.fail_next.append((200, {"ok": False, "error": "expired_trigger_id"}))
    response = click(live_server, fake_slack, tenant_a, channel, where, "reject")
    text = "Stateroom could not ask for the reason: open it in Stateroom."
    assert response.json()["text"] == text
    assert fake_slack.responses == [
        {"response_type": "ephemeral", "replace_original": False, "text": text}
    ]
    assert approval_row(tenant_a).status == "pending"
    assert not fake_slack.views
