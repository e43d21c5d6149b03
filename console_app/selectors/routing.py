"""What the routing pages show: groups with who is on call, rules with names, a dry run."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from approvals_app.routing import route
from stateroom.actor import Actor
from tenancy_app.groups import GroupStore
from tenancy_app.store import TenancyStore


@dataclass
class GroupRow:
    group: object
    members: list[str]
    on_call: list[str]


def people(tenant, actor: Actor) -> tuple[list, dict[int, str]]:
    """The tenant's members (one query) and user id -> username."""
    members = list(TenancyStore(tenant, actor).members())
    return members, {m.user_id: m.user.get_username() for m in members}


def group_rows(tenant, actor: Actor) -> list[GroupRow]:
    """Every group with its members in order and who a notice reaches now (two queries)."""
    store = GroupStore(tenant, actor)
    now = store.now()
    rows = []
    for group in store.groups():
        ordered = sorted(group.memberships.all(), key=lambda m: m.position)
        names = {m.user_id: m.user.get_username() for m in ordered}
        on_call = group.on_call([m.user_id for m in ordered], now)
        rows.append(GroupRow(group, list(names.values()), [names[u] for u in on_call]))
    return rows


def named(ids, names: dict[int, str]) -> list[str]:
    return [names.get(i, f"#{i}") for i in ids]


@dataclass
class Preview:
    rule: object = None
    is_default: bool = False
    asked: list[str] = field(default_factory=list)
    remind_at: datetime | None = None
    escalate_at: datetime | None = None
    escalated_to: list[str] = field(default_factory=list)
    asked_at: datetime | None = None


def preview(tenant, actor: Actor, *, tool_name, risk, metadata, deadline_minutes) -> Preview:
    """Which rule routes this call and who it reaches now; nothing is written."""
    groups = GroupStore(tenant, actor)
    asked_at = groups.now()
    expires_at = asked_at + timedelta(minutes=deadline_minutes) if deadline_minutes else None
    found = route(
        tenant,
        tool_name=tool_name,
        risk=risk,
        session_metadata=metadata,
        asked_at=asked_at,
        expires_at=expires_at,
    )
    if found.rule is None:
        return Preview(asked_at=asked_at)
    _members, names = people(tenant, actor)
    asked = groups.recipients(user_ids=found.user_ids, group_ids=found.group_ids)
    escalated = []
    if found.escalate_at is not None:
        escalated = groups.recipients(
            user_ids=found.escalate_user_ids, group_ids=found.escalate_group_ids
        )
    return Preview(
        rule=found.rule,
        is_default=found.rule.is_default,
        asked=named(asked, names),
        remind_at=found.remind_at,
        escalate_at=found.escalate_at,
        escalated_to=named(escalated, names),
        asked_at=asked_at,
    )
