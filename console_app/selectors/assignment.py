"""Who approvals are asked of, as the console shows it: the inbox's views, the assignees'
names, the nav badge, and an approval's notification trail."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace

from django.contrib.postgres.expressions import ArraySubquery
from django.db.models import Count, Max, Q, QuerySet

from approvals_app.store import ApprovalStore
from audit_app.store import AuditStore
from notifications_app.store import NotificationStore
from stateroom.actor import Actor
from tenancy_app.models import GroupMember, MemberGroup, Membership

# The inbox's views (`?view=`): asked of me (by name or through a group I am in), asked of a
# group I am in, or everything pending.
VIEWS = {"mine": "Assigned to me", "groups": "My groups", "all": "All"}
TRAIL_LIMIT = 100
TRAIL_ACTIONS = ("approval.reassigned", "approval.taken", "approval.escalated", "approval.reminded")


def _my_groups(tenant, user_id: int) -> ArraySubquery:
    """The ids of my groups, as an SQL array (no query of its own)."""
    rows = GroupMember.objects.filter(tenant=tenant, user_id=user_id).values("group_id")
    return ArraySubquery(rows)


def assigned_filter(tenant, user_id: int, view: str) -> Q:
    """The inbox rows of `view` for `user_id` ("all": no filter)."""
    groups = Q(assigned_group_ids__overlap=_my_groups(tenant, user_id))
    if view == "groups":
        return groups
    if view == "mine":
        return Q(assigned_user_ids__contains=[user_id]) | groups
    return Q()


@dataclass(frozen=True)
class Badge:
    pending: int  # every approval the inbox lists
    mine: int  # those asked of me (by name or through my groups)
    newest: int  # the newest of mine (its pk), 0 without one


def badge(tenant, user_id: int, inbox: QuerySet) -> Badge:
    """The nav's counts: one query."""
    mine = assigned_filter(tenant, user_id, "mine")
    found = inbox.order_by().aggregate(
        pending=Count("pk"), mine=Count("pk", filter=mine), newest=Max("pk", filter=mine)
    )
    return Badge(found["pending"], found["mine"], found["newest"] or 0)


def request_badge(request) -> Badge:
    """`badge` of the request's user, read once a request (the inbox and the nav share it)."""
    found = getattr(request, "_stateroom_badge", None)
    if found is None:
        inbox = ApprovalStore(request.tenant, Actor.from_request(request)).inbox()
        found = badge(request.tenant, request.user.pk, inbox)
        request._stateroom_badge = found
    return found


def name_assignees(tenant, approvals: list) -> None:
    """Set `approval.assignees` (names) on each row: two queries for all rows at most."""
    user_ids = {u for a in approvals for u in a.assigned_user_ids}
    group_ids = {g for a in approvals for g in a.assigned_group_ids}
    users = {}
    if user_ids:
        users = dict(
            Membership.objects.filter(tenant=tenant, user_id__in=user_ids).values_list(
                "user_id", "user__username"
            )
        )
    groups = {}
    if group_ids:
        groups = dict(
            MemberGroup.objects.filter(tenant=tenant, pk__in=group_ids).values_list("pk", "name")
        )
    for approval in approvals:
        approval.assignees = [users.get(u, f"user #{u}") for u in approval.assigned_user_ids] + [
            groups.get(g, f"group #{g}") for g in approval.assigned_group_ids
        ]


@dataclass
class TrailEntry:
    at: datetime
    text: str
    status: str = ""


NOTICE_VERBS = {
    "asked": "notified {who}",
    "reminder": "reminded {who}",
    "escalated": "escalated to {who}",
    "reassigned": "notified {who} of the reassignment",
    "expired": "told {who} it expired undecided",
    "ended": "told {who} the outcome",
    "test": "sent a test to {who}",
}


def _notification_text(row) -> str:
    """ "notified alice by email", "escalated to bob by slack (skipped: quiet hours)"."""
    how = row.get_channel_kind_display()
    if row.kind == "ended" and row.ref.startswith("update:"):
        text = f"updated the {how} message with the outcome"
    else:
        if row.recipient_id:
            who = row.recipient.get_username()
        else:
            who = f"channel {row.address}" if row.address else "the channel"
        text = NOTICE_VERBS.get(row.kind, "notified {who}").format(who=who) + f" by {how.lower()}"
    if row.status != "sent":
        text += f" ({row.status}{': ' + row.detail if row.detail else ''})"
    return text


def trail(tenant, actor: Actor, approval, names: dict[int, str] | None = None) -> list:
    """The notifications of an approval and its assignment's audit events, oldest first
    (two queries, then names of the assignees the events name)."""
    entries: list[TrailEntry] = []
    rows = list(NotificationStore(tenant, actor).of_approval(approval.approval_id)[:TRAIL_LIMIT])
    for row in rows:
        entries.append(
            TrailEntry(row.sent_at or row.created_at, _notification_text(row), row.status)
        )
        if row.acted_at:
            how = row.get_channel_kind_display()
            entries.append(
                TrailEntry(row.acted_at, f"{row.action or 'answered'} in {how} by {row.acted_by}")
            )
    events = list(
        AuditStore(tenant, actor)
        .list_events(target_type="approval", target_id=approval.approval_id)
        .filter(action__in=TRAIL_ACTIONS)
        .order_by("seq")[:TRAIL_LIMIT]
    )
    entries += _event_entries(tenant, events)
    return sorted(entries, key=lambda e: e.at)


def _event_entries(tenant, events: list) -> list[TrailEntry]:
    holder = [
        SimpleNamespace(
            assigned_user_ids=(event.after or {}).get("assigned_user_ids", []),
            assigned_group_ids=(event.after or {}).get("assigned_group_ids", []),
        )
        for event in events
    ]
    name_assignees(tenant, holder)
    entries = []
    for event, named in zip(events, holder, strict=True):
        who = ", ".join(named.assignees) or "nobody"
        text = {
            "approval.reassigned": f"reassigned to {who} by {event.actor_label}",
            "approval.taken": f"taken by {event.actor_label}",
            "approval.escalated": f"escalated to {who}",
            "approval.reminded": f"reminded {who}",
        }[event.action]
        if event.reason:
            text += f": {event.reason}"
        entries.append(TrailEntry(event.created_at, text))
    return entries
