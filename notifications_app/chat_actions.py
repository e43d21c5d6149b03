"""A decision given from a chat message (Slack's buttons, a signed webhook's action),
with the console's rules.

The chat user must be linked to a member by an admin (ChatLink), whose role has
the decide permission; the decision must be one a click can give (approve,
reject) and one the runtime allowed; the approval store then applies the rest
exactly as for the console: pending, not expired, the call and run as shown
(digest, run version), the reason rule and four-eyes. The decision is taken as
that member (the audit's actor label says where: "otto (Slack)"); every refusal
is audited (`chat.action_refused`, with why) and answered with a sentence the
user sees.

A click that may still ask for a reason (`Click.ask_reason`: Slack opens a modal)
and whose decision needs one (a rejection; any decision of a high or critical
call) is not decided: once the member may decide it, the answer `asks_reason`,
and the decision comes back with the reason written.

Callers run `act` inside `in_tenant(tenant)`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils import timezone

from approvals_app.store import REASON_REQUIRED_RISKS, ApprovalStore
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from tenancy_app.models import Membership
from tenancy_app.permissions import Permission

from .models import Channel
from .store import NotificationStore

# The clock of the stores an action uses (tests replace it).
CLOCK: Callable[[], datetime] = timezone.now
CHAT_DECISIONS = ("approve", "reject")
VERBS = {"approved": "Approved", "rejected": "Rejected", "pending": "First approval given"}


@dataclass(frozen=True)
class Click:
    """What a chat user asked: a decision bound to the call as they were shown it."""

    external_user_id: str
    approval_id: str
    decision: str
    digest: str | None
    run_version: int | None
    reason: str = ""
    message_ts: str | None = None
    # The channel can ask for a reason (a modal): do so rather than refuse without one.
    ask_reason: bool = False


@dataclass(frozen=True)
class Answer:
    """The outcome: decided (with the approval), refused with `why`, or a reason to ask
    for first (`asks_reason`); `text` for the user."""

    text: str
    why: str = ""
    approval: Any = None  # the decided ApprovalRequest
    asks_reason: bool = False

    @property
    def decided(self) -> bool:
        return self.approval is not None


def act(tenant, channel: Channel, click: Click, *, origin: str) -> Answer:
    """Decide `click` as the member its chat user is linked to, or refuse it (audited),
    or ask for the reason it needs (`Click.ask_reason`)."""
    member = _member(tenant, channel, click, origin)
    if isinstance(member, Answer):
        return member
    actor, name = member
    if click.digest is None or click.run_version is None:
        return _refuse(
            tenant,
            actor,
            channel,
            click,
            "unbound",
            "This message does not say which call it shows: open it in Stateroom.",
        )
    if click.decision not in CHAT_DECISIONS:
        return _refuse(
            tenant,
            actor,
            channel,
            click,
            "decision_not_offered",
            "Only approve and reject are given from chat: open it in Stateroom.",
        )
    if click.ask_reason and not click.reason.strip() and _needs_reason(tenant, actor, click):
        return Answer(text="This decision needs a reason.", asks_reason=True)
    return _decide(tenant, actor, channel, click, origin, name)


def _member(tenant, channel: Channel, click: Click, origin: str) -> tuple[Actor, str] | Answer:
    """The member the chat user is linked to, as an actor who may decide, and their name;
    or the refusal (audited)."""
    anonymous = Actor.system(f"{origin.lower()}:{click.external_user_id}"[:200])
    user_id = NotificationStore(tenant, anonymous, clock=CLOCK).linked_user(
        channel, click.external_user_id
    )
    if user_id is None:
        return _refuse(
            tenant,
            anonymous,
            channel,
            click,
            "unlinked_user",
            f"Your {origin} account is not linked to a Stateroom member: ask an admin to link it.",
        )
    membership = (
        Membership.objects.filter(tenant=tenant, user_id=user_id).select_related("user").first()
    )
    if membership is None:
        return _refuse(
            tenant, anonymous, channel, click, "not_a_member", "You are not a member of it."
        )
    actor = Actor(
        "user",
        str(user_id),
        f"{membership.user.get_username()} ({origin})",
        uuid.uuid4().hex,
    )
    if not membership.can(Permission.DECIDE):
        return _refuse(
            tenant,
            actor,
            channel,
            click,
            "no_permission",
            "Your role cannot decide approvals (it needs the operator role).",
        )
    return actor, membership.user.get_username()


def _needs_reason(tenant, actor: Actor, click: Click) -> bool:
    """The store's reason rule (`_check_reason`), asked before the decision. An unknown
    approval needs none here: the store refuses it."""
    if click.decision == "reject":
        return True
    try:
        approval = ApprovalStore(tenant, actor, clock=CLOCK).get(click.approval_id)
    except NotFound:
        return False
    return approval.risk in REASON_REQUIRED_RISKS


def _decide(tenant, actor: Actor, channel: Channel, click: Click, origin: str, name: str):
    try:
        approval = ApprovalStore(tenant, actor, clock=CLOCK).decide(
            approval_id=click.approval_id,
            decision=click.decision,
            reason=click.reason,
            approved_arguments=None,
            response="",
            expected_digest=click.digest,
            expected_run_version=click.run_version,
        )
    except NotFound:
        return _refuse(tenant, actor, channel, click, "not_found", "No such approval.")
    except Conflict as exc:
        return _refuse(tenant, actor, channel, click, exc.code, _conflict_text(exc))
    except Unprocessable as exc:
        if exc.details.get("reason") == ["required"]:
            why, text = "reason_required", "This decision needs a reason."
        elif "reason" in exc.details:
            why, text = "reason_invalid", f"The reason: {'; '.join(exc.details['reason'])}."
        elif exc.code == "decision_not_allowed":
            why, text = exc.code, f"The runtime cannot honour '{click.decision}' for this call."
        else:
            why, text = exc.code, f"Not decided: {exc.message} Open it in Stateroom."
        return _refuse(tenant, actor, channel, click, why, text)
    verb = VERBS.get(approval.status, approval.status.title())
    NotificationStore(tenant, actor, clock=CLOCK).acted(
        channel=channel,
        approval_id=approval.approval_id,
        action=click.decision,
        acted_by=actor.label,
        recipient_id=int(actor.id),
        message_ts=click.message_ts,
    )
    return Answer(text=f"{verb} by {name} in {origin}.", approval=approval)


def _refuse(tenant, actor: Actor, channel: Channel, click: Click, why: str, text: str) -> Answer:
    NotificationStore(tenant, actor, clock=CLOCK).action_refused(
        channel=channel,
        why=why,
        approval_id=click.approval_id[:128],
        decision=click.decision[:32],
        external_user_id=click.external_user_id[:64],
    )
    return Answer(text=text, why=why)


def _conflict_text(exc: Conflict) -> str:
    details = exc.details
    if exc.code == "already_decided":
        by = details.get("decided_by") or "the system"
        return f"Already {details.get('status')} by {by}: nothing was changed."
    if exc.code == "call_changed":
        return "The call or its run changed since this message was sent: open it in Stateroom."
    if exc.code == "approval_expired":
        return "It expired before your decision."
    if exc.code == "second_approver_required":
        return "Critical calls need a second, different approver."
    return f"Not decided: {exc.message}"
