"""Inbound answers from chat: Slack's interaction requests, and a signed webhook's actions.

`POST /hooks/slack/<tenant>/<channel_id>/` is the Request URL of the tenant's
Slack app. It is not behind the console login: Slack signs each request
(`X-Slack-Signature`, "v0=" + HMAC-SHA256 of "v0:{timestamp}:{body}" with the
app's signing secret, the timestamp within five minutes), and a click is taken
only as the member its Slack user is linked to (`chat_actions`). A click whose
decision needs a reason opens a modal (`views.open` with the click's
`trigger_id`); its `view_submission` comes back here, signed the same way, and is
decided with the reason written: the modal closes (200, empty body) and the
message shows the outcome, or it shows why not on the Reason field
(`{"response_action": "errors", ...}`, the refusal audited).
`POST /hooks/webhook/<tenant>/<channel_id>/` takes a Standard-Webhooks-signed
JSON action from another chat tool, signed with the channel's secret.

A request whose signature does not verify is answered 401 and nothing else (it
is recorded as `access.denied`, at most once per window); an unknown tenant or
channel (another tenant's included) 404. Every other refusal is audited
(`chat.action_refused`) and answered 200 with a sentence the user sees.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from django.http import Http404, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from slack_sdk.signature import Clock, SignatureVerifier
from standardwebhooks.webhooks import WebhookVerificationError

from stateroom import egress, ports
from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.webhooks import signer

from .channels import slack
from .chat_actions import Answer, Click, act
from .models import Channel, ChannelKind
from .store import NotificationStore

logger = logging.getLogger(__name__)

# How far Slack's timestamp may be from our clock (Slack's own rule).
MAX_SKEW_SECONDS = 5 * 60
RESPONSE_URL_TIMEOUT = 2.0


class SlackClock(Clock):
    """The verifier's clock (tests replace `now`)."""

    def now(self) -> float:
        return time.time()


CLOCK = SlackClock()


def _channel(slug: str, channel_id: str, kind: str) -> tuple[Tenant, Channel]:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise Http404("No such channel.")
    with in_tenant(tenant):
        try:
            channel = NotificationStore(tenant, Actor.system(kind)).channel(channel_id)
        except NotFound as exc:
            raise Http404("No such channel.") from exc
    if channel.kind != kind or not channel.enabled:
        raise Http404("No such channel.")
    return tenant, channel


def _unsigned(request, tenant: Tenant, code: str) -> HttpResponse:
    ports.audit().record_access_denied(
        tenant=tenant,
        actor=Actor.system("unsigned request"),
        method=request.method,
        path=request.path,
        status=401,
        code=code,
    )
    return HttpResponse(status=401)


@csrf_exempt
@require_POST
def slack_action(request, slug: str, channel_id: str):
    tenant, channel = _channel(slug, channel_id, ChannelKind.SLACK)
    body = request.body
    stamp = request.headers.get("X-Slack-Request-Timestamp", "")
    signature = request.headers.get("X-Slack-Signature", "")
    try:
        fresh = abs(CLOCK.now() - int(stamp)) <= MAX_SKEW_SECONDS
    except ValueError:
        fresh = False
    if not fresh:
        return _unsigned(request, tenant, "stale_signature")
    if not SignatureVerifier(channel.signing_secret, clock=CLOCK).is_valid(body, stamp, signature):
        return _unsigned(request, tenant, "bad_signature")
    payload = _slack_payload(request)
    if payload is None:
        return HttpResponse(status=400)
    if payload.get("type") == "view_submission":
        return _slack_submission(tenant, channel, payload)
    click = _slack_click(payload)
    if click is None:  # the link button, or another interaction: nothing to do
        return HttpResponse(status=200)
    with in_tenant(tenant):
        answer = act(tenant, channel, click, origin="Slack")
    if answer.asks_reason:
        return _ask_reason(channel, payload, click)
    if answer.decided:
        content, links = _message_parts((payload.get("message") or {}).get("blocks"))
        _show_outcome(channel, _message_ref(payload), content, links, answer)
    else:
        _tell(payload.get("response_url"), answer.text)
    return _ephemeral(answer.text)


def _ephemeral(text: str) -> JsonResponse:
    return JsonResponse({"response_type": "ephemeral", "replace_original": False, "text": text})


def _slack_payload(request) -> dict[str, Any] | None:
    try:
        payload = json.loads(request.POST.get("payload", ""))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _slack_click(payload: dict[str, Any]) -> Click | None:
    """The button clicked, if it is one of ours carrying a binding."""
    actions = payload.get("actions") or []
    if payload.get("type") != "block_actions" or not actions or not isinstance(actions[0], dict):
        return None
    action = actions[0]
    action_id = str(action.get("action_id", ""))
    if not action_id.startswith(slack.ACTION_PREFIX) or "value" not in action:
        return None
    try:
        value = json.loads(action["value"])
    except (TypeError, ValueError):
        return None
    if not isinstance(value, dict):
        return None
    container = payload.get("container") or {}
    return Click(
        external_user_id=str((payload.get("user") or {}).get("id", "")),
        approval_id=str(value.get("approval_id", "")),
        decision=action_id.removeprefix(slack.ACTION_PREFIX),
        digest=_str_or_none(value.get("digest")),
        run_version=_int_or_none(value.get("run_version")),
        message_ts=_str_or_none(container.get("message_ts")),
        ask_reason=True,
    )


def _message_ref(payload: dict[str, Any]) -> dict[str, Any]:
    container = payload.get("container") or {}
    return {"channel": container.get("channel_id"), "ts": container.get("message_ts")}


def _message_parts(blocks: Any) -> tuple[list[dict], list[dict]]:
    """A message's blocks as (its content, its link buttons): what stays once decided."""
    content, links = [], []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict) or block.get("type") == "input":
            continue
        if block.get("type") != "actions":
            content.append(block)
        else:
            links += [e for e in block.get("elements") or [] if isinstance(e, dict) and "url" in e]
    return content, links


def _ask_reason(channel: Channel, payload: dict[str, Any], click: Click) -> HttpResponse:
    """Open the modal asking the reason of `click`, bound to the call and the message."""
    ref = _message_ref(payload)
    content, links = _message_parts((payload.get("message") or {}).get("blocks"))
    metadata = {
        "approval_id": click.approval_id,
        "digest": click.digest,
        "run_version": click.run_version,
        "decision": click.decision,
        "channel": ref["channel"],
        "ts": ref["ts"],
        "response_url": payload.get("response_url"),
        "url": links[0]["url"] if links else None,
    }
    view = slack.reason_modal(click.decision, content, json.dumps(metadata, separators=(",", ":")))
    try:
        slack.open_view(channel, str(payload.get("trigger_id") or ""), view)
    except (slack.RetryableSendError, slack.SendRefused) as exc:
        logger.warning("could not open the Slack modal: %s", exc)
        text = "Stateroom could not ask for the reason: open it in Stateroom."
        _tell(payload.get("response_url"), text)
        return _ephemeral(text)
    return HttpResponse(status=200)


def _slack_submission(tenant: Tenant, channel: Channel, payload: dict[str, Any]) -> HttpResponse:
    """The modal's reason, submitted: decide with it (the modal closes), or say why not."""
    view = payload.get("view") or {}
    if view.get("callback_id") != slack.MODAL_CALLBACK:
        return HttpResponse(status=200)
    try:
        meta = json.loads(view.get("private_metadata") or "")
    except ValueError:
        meta = None
    meta = meta if isinstance(meta, dict) else {}
    values = (view.get("state") or {}).get("values") or {}
    reason = ((values.get(slack.REASON_BLOCK) or {}).get(slack.REASON_ACTION) or {}).get("value")
    click = Click(
        external_user_id=str((payload.get("user") or {}).get("id", "")),
        approval_id=str(meta.get("approval_id") or ""),
        decision=str(meta.get("decision") or ""),
        digest=_str_or_none(meta.get("digest")),
        run_version=_int_or_none(meta.get("run_version")),
        reason=reason if isinstance(reason, str) else "",
        message_ts=_str_or_none(meta.get("ts")),
    )
    with in_tenant(tenant):
        answer = act(tenant, channel, click, origin="Slack")
    if not answer.decided:
        return JsonResponse(
            {"response_action": "errors", "errors": {slack.REASON_BLOCK: answer.text}}
        )
    content, _ = _message_parts(view.get("blocks"))
    url = meta.get("url")
    links = [slack.link_button(url)] if isinstance(url, str) and url else []
    _show_outcome(
        channel, {"channel": meta.get("channel"), "ts": meta.get("ts")}, content, links, answer
    )
    _tell(meta.get("response_url"), answer.text)
    return HttpResponse(status=200)


def _show_outcome(
    channel: Channel, ref: dict[str, Any], content: list[dict], links: list[dict], answer: Answer
) -> None:
    """Rewrite the message with the outcome: its buttons go, the link stays."""
    if not ref["channel"] or not ref["ts"]:
        return
    kept = [
        *content,
        {"type": "section", "text": {"type": "mrkdwn", "text": f"*{slack.escape(answer.text)}*"}},
    ]
    if links:
        kept.append({"type": "actions", "elements": links})
    try:
        slack.update_message(channel, ref, text=answer.text, blocks=kept)
    except (slack.RetryableSendError, slack.SendRefused) as exc:
        # The decision stands; the "ended" notice updates the message again.
        logger.warning("could not update the Slack message %s: %s", ref, exc)


def _tell(response_url: Any, text: str) -> None:
    """Show the user why, as Slack shows a reply to a click: an ephemeral message."""
    if not isinstance(response_url, str) or not response_url:
        return
    body = json.dumps({"response_type": "ephemeral", "replace_original": False, "text": text})
    try:
        egress.post(
            response_url,
            content=body.encode(),
            headers={"Content-Type": "application/json"},
            timeout=RESPONSE_URL_TIMEOUT,
        )
    except Exception as exc:  # the refusal stands and is audited; the reply is best effort
        logger.warning("could not answer Slack's response_url: %s", exc)


@csrf_exempt
@require_POST
def webhook_action(request, slug: str, channel_id: str):
    tenant, channel = _channel(slug, channel_id, ChannelKind.WEBHOOK)
    try:
        data = signer(channel.secret).verify(request.body, dict(request.headers))
    except (WebhookVerificationError, ValueError):
        return _unsigned(request, tenant, "bad_signature")
    if not isinstance(data, dict):
        return JsonResponse(
            {"ok": False, "why": "bad_request", "text": "A JSON object."}, status=400
        )
    click = Click(
        external_user_id=str(data.get("user", "")),
        approval_id=str(data.get("approval_id", "")),
        decision=str(data.get("decision", "")),
        digest=_str_or_none(data.get("digest")),
        run_version=_int_or_none(data.get("run_version")),
        reason=str(data.get("reason") or "")[:4000],
    )
    with in_tenant(tenant):
        answer = act(tenant, channel, click, origin=channel.name)
    body: dict[str, Any] = {"ok": answer.decided, "text": answer.text}
    if answer.decided:
        body["status"] = answer.approval.status
    else:
        body["why"] = answer.why
    return JsonResponse(body)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
