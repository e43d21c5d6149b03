"""Slack: a Block Kit message per person (a DM to a user id, or to a channel id), with
Approve / Reject buttons when its recipient may decide from it.

Sent with the official `slack_sdk` Web API client and the channel's bot token, to
`settings.STATEROOM_SLACK_API_URL` (checked by `stateroom.egress` like any
destination: a private address only when STATEROOM_WEBHOOK_ALLOW lists it).
A button's `value` binds the click to the call as shown (approval id, digest,
run version): `notifications_app.interactions` takes it, as the linked member.

Approve and Reject are offered as buttons (each when the runtime allows it). A
decision that needs a reason (a rejection; any decision of a high or critical
call) is not taken by the click: it opens a modal (`reason_modal`, through
`views.open`) with the message's content and a required "Reason", whose
submission decides (`notifications_app.interactions`).
"""

from __future__ import annotations

import json
import urllib.error
from typing import Any

from django.conf import settings
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from approvals_app.store import MAX_DECISION_REASON_LENGTH
from stateroom import egress

from .base import Message, RetryableSendError, SendRefused, Sent

TIMEOUT_SECONDS = 10
# Slack's own codes worth retrying (besides HTTP 429 and 5xx).
RETRYABLE_ERRORS = frozenset(
    {"ratelimited", "service_unavailable", "internal_error", "fatal_error"}
)
# The decisions a click can give; an edit or a response needs the console.
BUTTON_DECISIONS = ("approve", "reject")
ACTION_PREFIX = "stateroom_"
MAX_TEXT = 2900  # a section's text is at most 3000 characters
# The modal asking for a decision's reason.
MODAL_CALLBACK = "stateroom_decide"
REASON_BLOCK = "stateroom_reason"
REASON_ACTION = "reason"


def client(channel, *, timeout: float = TIMEOUT_SECONDS) -> WebClient:
    """The Web API client of `channel` (its bot token), at the checked API URL."""
    base_url = settings.STATEROOM_SLACK_API_URL
    try:
        egress.check_url(base_url)
    except egress.UnsafeDestination as exc:
        raise SendRefused(f"Slack API URL refused: {exc}") from exc
    return WebClient(token=channel.secret, base_url=base_url, timeout=timeout, retry_handlers=[])


def send(channel, notification, message: Message) -> Sent:
    """`chat.postMessage` to `notification.address` (a user id for a DM, or a channel id)."""
    if not notification.address:
        raise SendRefused("No Slack user or channel id to send to.")
    response = _call(
        client(channel).chat_postMessage,
        channel=notification.address,
        text=message.text or message.title,
        blocks=blocks(message),
        unfurl_links=False,
    )
    return Sent(external_ref={"channel": response["channel"], "ts": response["ts"]})


def update(channel, notification, message: Message) -> None:
    """`chat.update` of the sent message with the approval's outcome (no buttons)."""
    ref = notification.external_ref or {}
    if not ref.get("channel") or not ref.get("ts"):
        raise SendRefused("The message was not sent: nothing to update.")
    update_message(
        channel,
        ref,
        text=message.outcome or message.text,
        blocks=blocks(message, buttons=False),
    )


def update_message(channel, ref: dict[str, Any], *, text: str, blocks: list[dict]) -> None:
    _call(
        client(channel, timeout=2).chat_update,
        channel=ref["channel"],
        ts=ref["ts"],
        text=text,
        blocks=blocks,
    )


def open_view(channel, trigger_id: str, view: dict[str, Any]) -> None:
    """`views.open`: show `view` to the user whose interaction gave `trigger_id`."""
    _call(client(channel, timeout=2).views_open, trigger_id=trigger_id, view=view)


def _call(method, **kwargs):
    try:
        return method(**kwargs)
    except SlackApiError as exc:
        status = exc.response.status_code
        error = exc.response.get("error", "") if isinstance(exc.response.data, dict) else ""
        if status == 429 or status >= 500 or error in RETRYABLE_ERRORS:
            raise RetryableSendError(f"Slack answered {status} {error}".strip()) from exc
        raise SendRefused(f"Slack refused it: {error or status}") from exc
    except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
        raise RetryableSendError(f"Slack could not be reached: {exc}") from exc


# --- Block Kit ---------------------------------------------------------------


def blocks(message: Message, *, buttons: bool = True) -> list[dict[str, Any]]:
    """The message as Block Kit: header, summary, key arguments, expiry, then the
    outcome (once decided) or the actions (a link, and buttons when it may be decided)."""
    out: list[dict[str, Any]] = [
        {"type": "header", "text": _plain(message.title[:150])},
    ]
    if message.summary or message.text:
        out.append({"type": "section", "text": _mrkdwn(escape(message.summary or message.text))})
    fields = [
        _mrkdwn(f"*{escape(name)}*\n{escape(value)}") for name, value in message.key_arguments
    ]
    if message.risk:
        fields.insert(0, _mrkdwn(f"*Risk*\n{escape(message.risk)}"))
    if message.tool_name:
        fields.insert(0, _mrkdwn(f"*Tool*\n`{escape(message.tool_name)}`"))
    if fields:
        out.append({"type": "section", "fields": fields[:10]})
    if message.expires_at is not None:
        stamp = int(message.expires_at.timestamp())
        fallback = message.expires_at.isoformat(timespec="minutes")
        out.append(
            {
                "type": "context",
                "elements": [
                    _mrkdwn(f"Expires <!date^{stamp}^{{date_short_pretty}} {{time}}|{fallback}>")
                ],
            }
        )
    if message.outcome:
        out.append({"type": "section", "text": _mrkdwn(f"*{escape(message.outcome)}*")})
    out.append({"type": "actions", "elements": _actions(message, buttons=buttons)})
    return out


def _actions(message: Message, *, buttons: bool) -> list[dict[str, Any]]:
    elements: list[dict[str, Any]] = []
    if buttons and decidable(message):
        value = json.dumps(
            {
                "approval_id": message.approval_id,
                "digest": message.digest,
                "run_version": message.run_version,
            },
            separators=(",", ":"),
        )
        for decision in clickable(message):
            elements.append(
                {
                    "type": "button",
                    "action_id": ACTION_PREFIX + decision,
                    "text": _plain(decision.title()),
                    "style": "primary" if decision == "approve" else "danger",
                    "value": value,
                }
            )
    elements.append(link_button(message.url))
    return elements


def link_button(url: str) -> dict[str, Any]:
    """The button opening the approval in Stateroom (no decision is taken by following it)."""
    return {
        "type": "button",
        "action_id": ACTION_PREFIX + "open",
        "text": _plain("Open in Stateroom"),
        "url": url,
    }


def decidable(message: Message) -> bool:
    return message.recipient_can_decide and message.status == "pending" and not message.outcome


def clickable(message: Message) -> list[str]:
    """The decisions offered as buttons: those the runtime allows (one that needs a
    reason asks for it in a modal)."""
    return [d for d in BUTTON_DECISIONS if d in message.allowed_decisions]


def reason_modal(decision: str, shown: list[dict[str, Any]], metadata: str) -> dict[str, Any]:
    """The modal asking the reason of `decision`: the message's content as shown (its
    blocks but the buttons), then one required "Reason". `metadata` (at most 3000
    characters) binds the submission to the call and the message."""
    content = [b for b in shown if isinstance(b, dict) and b.get("type") != "actions"]
    verb = decision.title()
    return {
        "type": "modal",
        "callback_id": MODAL_CALLBACK,
        "private_metadata": metadata,
        "title": _plain(f"{verb} the call"),
        "submit": _plain(verb),
        "close": _plain("Cancel"),
        "blocks": [
            *content[:90],
            {
                "type": "input",
                "block_id": REASON_BLOCK,
                "label": _plain("Reason"),
                "hint": _plain("Required to reject, and to decide high or critical risk."),
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_ACTION,
                    "multiline": True,
                    "max_length": MAX_DECISION_REASON_LENGTH,
                },
            },
        ],
    }


def escape(text: str) -> str:
    """Slack's mrkdwn escaping: what a runtime wrote can mention no one and link nowhere."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text or " ", "emoji": False}


def _mrkdwn(text: str) -> dict[str, Any]:
    return {"type": "mrkdwn", "text": text[:MAX_TEXT] or " "}
