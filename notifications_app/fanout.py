"""From an approval's notice to messages: who hears it, on which channels, once.

`handle_notice(tenant_id, approval_id, kind, ref)` (the `ports.approval_notices`
port; the outbox runs it at least once) decides, in one tenant transaction:

- who: `asked`, `reminder`, `reassigned`: the approval's assignees (groups'
  members, the on-call member of an on-call list); `escalated`: the escalation
  tier alone; `expired`: the tenant's admins; `ended`: nobody new, but each
  chat message sent of it is rewritten with the outcome (one update each). A
  notice asking for a decision the approval no longer waits for is dropped.
- how: each person's channel kinds for the call's risk (notifications_app.preferences),
  among the tenant's enabled channels: email to their address; Slack as a
  direct message to the chat user linked to them, or else one post per notice
  to the Slack channel's default `config["channel"]`; a webhook channel gets
  one message per notice. Quiet hours hold back all but the console, except a
  critical call's escalation; what is held back, or has no address, is
  recorded `skipped` with why.

Each notification is written once (`notification_once`), and the new ones
that wait for delivery get ONE outbox job together
(`notifications_app.tasks.deliver_notifications`, their ids) in the same
transaction: a notice handled twice, or by two workers at once, sends nothing
twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.utils import timezone

from approvals_app.notices import (
    NOTICE_ASKED,
    NOTICE_ENDED,
    NOTICE_ESCALATED,
    NOTICE_EXPIRED,
    NOTICE_REASSIGNED,
    NOTICE_REMINDER,
)
from approvals_app.store import ApprovalStore
from outbox_app.relay import enqueue
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.models import Membership, Role, Tenant
from tenancy_app.scoping import in_tenant

from .channels import can_update
from .models import Channel, ChatLink, NotificationStatus
from .preferences import CONSOLE, EMAIL, SLACK, WEBHOOK, held_back, in_quiet_hours, kinds_for
from .store import Draft, NotificationStore

DELIVER_TASK = "notifications_app.tasks.deliver_notification"  # one notification
DELIVER_MANY_TASK = "notifications_app.tasks.deliver_notifications"  # a notice's
ASKING = (NOTICE_ASKED, NOTICE_REMINDER, NOTICE_ESCALATED, NOTICE_REASSIGNED)
UPDATE_REF = "update:"  # an `ended` notification that rewrites a sent message: update:<pk>:<status>
QUIET = "held back: quiet hours"
NO_EMAIL = "no email address"


def handle_notice(tenant_id: int, approval_id: str, kind: str, ref: str) -> str:
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return "no-tenant"
    return Fanout(tenant).handle(approval_id, kind, ref)


@dataclass
class Channels:
    """The tenant's enabled channels by kind, in order, and the Slack links."""

    by_kind: dict[str, list[Channel]] = field(default_factory=dict)
    links: dict[int, tuple[Channel, str]] = field(default_factory=dict)

    def first(self, kind: str) -> Channel | None:
        found = self.by_kind.get(kind)
        return found[0] if found else None


class Fanout:
    """One notice to its notifications (`clock`: quiet hours and on-call turns)."""

    def __init__(self, tenant: Tenant, *, clock: Callable[[], datetime] = timezone.now) -> None:
        self.tenant = tenant
        self.actor = Actor.system("notifications")
        self.now = clock
        self.store = NotificationStore(tenant, self.actor, clock=clock)

    def handle(self, approval_id: str, kind: str, ref: str = "") -> str:
        """Write the notice's notifications and their delivery jobs; what it did."""
        with in_tenant(self.tenant):
            approvals = ApprovalStore(self.tenant, self.actor, clock=self.now)
            approval = approvals.for_notices([approval_id]).get(approval_id)  # lean: one query
            if approval is None:
                return "no-approval"
            if kind in ASKING and not approval.is_pending:
                return "not-pending"
            drafts = self.drafts(approval, kind, ref)
            queued = self.store.record(drafts)
            if queued:  # one delivery job per notice, with its notifications
                enqueue(tenant=self.tenant, task=DELIVER_MANY_TASK, args=[self.tenant.pk, queued])
        return f"{len(queued)} queued"

    def drafts(self, approval, kind: str, ref: str) -> list[Draft]:
        channels = self._channels()
        if kind == NOTICE_ENDED:
            ref = ref or str(approval.status)
            return self._updates(approval) + self._channel_posts(approval, kind, ref, channels)
        people = self._people(approval, kind)
        drafts: list[Draft] = []
        unlinked = False
        preferences, emails = self.store.people(people)  # one statement
        now = self.now()
        for user_id in people:
            mine, wants_post = self._for_person(
                approval, kind, ref, user_id, preferences.get(user_id), emails, channels, now
            )
            drafts += mine
            unlinked = unlinked or wants_post
        return drafts + self._channel_posts(approval, kind, ref, channels, slack=unlinked)

    def _people(self, approval, kind: str) -> list[int]:
        if kind == NOTICE_EXPIRED:
            return list(
                Membership.objects.filter(tenant=self.tenant, role=Role.ADMIN)
                .order_by("user_id")
                .values_list("user_id", flat=True)
            )
        groups = GroupStore(self.tenant, self.actor, clock=self.now)
        if kind == NOTICE_ESCALATED:
            return groups.recipients(
                user_ids=approval.escalate_user_ids, group_ids=approval.escalate_group_ids
            )
        return groups.recipients(
            user_ids=approval.assigned_user_ids, group_ids=approval.assigned_group_ids
        )

    def _for_person(self, approval, kind, ref, user_id, preference, emails, channels, now):
        """One person's notifications, and whether they wanted Slack but have no link."""
        quiet = in_quiet_hours(preference, now)
        drafts, unlinked = [], False
        for channel_kind in kinds_for(preference, approval.risk):
            channel, address = None, ""
            if channel_kind == EMAIL:
                channel, address = channels.first(EMAIL), emails.get(user_id) or ""
            elif channel_kind == SLACK:
                if user_id not in channels.links:
                    unlinked = unlinked or bool(channels.by_kind.get(SLACK))
                    continue
                channel, address = channels.links[user_id]
            if channel is None and channel_kind != CONSOLE:
                continue  # the tenant has no such channel enabled (webhooks: per notice)
            status, detail = NotificationStatus.QUEUED, ""
            if held_back(channel_kind, quiet=quiet, notice=kind, risk=approval.risk):
                status, detail = NotificationStatus.SKIPPED, QUIET
            elif channel_kind == EMAIL and not address:
                status, detail = NotificationStatus.SKIPPED, NO_EMAIL
            drafts.append(
                Draft(
                    approval_id=approval.approval_id,
                    kind=kind,
                    ref=ref,
                    recipient_id=user_id,
                    channel_id=channel.pk if channel else None,
                    channel_kind=channel_kind,
                    address=address,
                    status=status,
                    detail=detail,
                )
            )
        return drafts, unlinked

    def _channel_posts(self, approval, kind, ref, channels, *, slack: bool = False) -> list[Draft]:
        """One post per notice to the Slack channel's default channel (for people without
        a linked chat user), and one message per notice to the webhook channel."""
        posts = []
        if slack:
            default = next((c for c in channels.by_kind[SLACK] if c.config.get("channel")), None)
            if default is not None:
                posts.append((default, SLACK, str(default.config["channel"])))
        webhook = channels.first(WEBHOOK)
        if webhook is not None:
            posts.append((webhook, WEBHOOK, ""))
        return [
            Draft(
                approval_id=approval.approval_id,
                kind=kind,
                ref=ref,
                recipient_id=None,
                channel_id=channel.pk,
                channel_kind=channel_kind,
                address=address,
            )
            for channel, channel_kind, address in posts
        ]

    def _updates(self, approval) -> list[Draft]:
        """`ended`: each sent message that can be rewritten gets the outcome, once."""
        return [
            Draft(
                approval_id=approval.approval_id,
                kind=NOTICE_ENDED,
                ref=f"{UPDATE_REF}{sent.pk}:{approval.status}",
                recipient_id=sent.recipient_id,
                channel_id=sent.channel_id,
                channel_kind=sent.channel_kind,
                address=sent.address,
            )
            for sent in self.store.sent_with_ref(approval.approval_id).exclude(kind=NOTICE_ENDED)
            if sent.channel_id is not None and can_update(sent.channel_kind)
        ]

    def _channels(self) -> Channels:
        found = Channels()
        for channel in Channel.objects.filter(tenant=self.tenant, enabled=True).order_by(
            "name", "id"
        ):
            found.by_kind.setdefault(channel.kind, []).append(channel)
        slack = found.by_kind.get(SLACK, [])
        if slack:
            order = {c.pk: i for i, c in enumerate(slack)}
            by_pk = {c.pk: c for c in slack}
            links = ChatLink.objects.filter(tenant=self.tenant, channel_id__in=list(order))
            for link in sorted(links, key=lambda li: order[li.channel_id]):
                found.links.setdefault(
                    link.user_id, (by_pk[link.channel_id], link.external_user_id)
                )
        return found
