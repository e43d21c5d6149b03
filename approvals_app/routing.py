"""Routing: who is asked for an approval, and when they are reminded or escalated.

`route(tenant, tool_name=…, risk=…, session_metadata=…, asked_at=…, expires_at=…)`
picks the first enabled rule (by `position`, then id) whose conditions all hold:

- `tool_pattern`: a shell glob on the tool name (`payments.*`, `*refund*`); empty: any;
- `risks`: the call's risk is one of them; empty: any;
- `session_metadata`: every `key: value` is in the session's metadata (compared as
  text, so `{"region": "eu"}` matches `"eu"` and `{"tier": "1"}` matches `1`).

When none matches, the tenant's default rule (`is_default`) does, if it has
one; without either the approval is asked of nobody in particular (every
operator sees it under "all"). The route also fixes the schedule at the
store's clock: a reminder `remind_after_minutes` after asking, an escalation
when `escalate_at_percent` of the time to the deadline has passed (only for
an approval with a deadline).

`RoutingRules` is the only writer of the rules (audited).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max

from stateroom.errors import NotFound, Unprocessable
from stateroom.store import BaseStore
from tenancy_app.models import MemberGroup, Membership

from .models import Risk, RoutingRule

MAX_RULES = 200
MAX_METADATA_KEYS = 10


@dataclass(frozen=True)
class Route:
    """Who an approval asks and its schedule (`rule` None: no rule matched, no default)."""

    rule: RoutingRule | None
    user_ids: list[int] = field(default_factory=list)
    group_ids: list[int] = field(default_factory=list)
    remind_at: datetime | None = None
    escalate_at: datetime | None = None
    escalate_user_ids: list[int] = field(default_factory=list)
    escalate_group_ids: list[int] = field(default_factory=list)
    notify_admins_on_expiry: bool = False

    @property
    def fields(self) -> dict[str, Any]:
        """The approval's routing fields (`ApprovalRequest`)."""
        return {
            "route_rule": self.rule,
            "assigned_user_ids": self.user_ids,
            "assigned_group_ids": self.group_ids,
            "remind_at": self.remind_at,
            "escalate_at": self.escalate_at,
            "escalate_user_ids": self.escalate_user_ids,
            "escalate_group_ids": self.escalate_group_ids,
            "notify_admins_on_expiry": self.notify_admins_on_expiry,
        }

    @property
    def asks_someone(self) -> bool:
        return bool(self.user_ids or self.group_ids)


def matches(rule: RoutingRule, tool_name: str, risk: str, metadata: Mapping[str, Any]) -> bool:
    if rule.tool_pattern and not fnmatch.fnmatchcase(tool_name, rule.tool_pattern):
        return False
    if rule.risks and risk not in rule.risks:
        return False
    return all(
        key in metadata and _text(metadata[key]) == _text(value)
        for key, value in (rule.session_metadata or {}).items()
    )


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def pick(rules: list[RoutingRule], tool_name: str, risk: str, metadata: Mapping[str, Any]):
    """The rule that routes this call: the first enabled match, else the default."""
    default = None
    for rule in rules:
        if not rule.enabled:
            continue
        if rule.is_default:
            default = default or rule
            continue
        if matches(rule, tool_name, risk, metadata):
            return rule
    return default


def route(
    tenant,
    *,
    tool_name: str,
    risk: str,
    session_metadata: Mapping[str, Any] | None,
    asked_at: datetime,
    expires_at: datetime | None,
) -> Route:
    """The route of one call (one query: the tenant's enabled rules, in order)."""
    rules = list(RoutingRule.objects.filter(tenant=tenant, enabled=True).order_by("position", "id"))
    rule = pick(rules, tool_name, risk, session_metadata or {})
    if rule is None:
        return Route(rule=None)
    remind_at = escalate_at = None
    # A reminder goes to the people asked: a rule that asks nobody reminds nobody.
    if rule.remind_after_minutes and (rule.user_ids or rule.group_ids):
        remind_at = asked_at + timedelta(minutes=rule.remind_after_minutes)
    if rule.escalate_at_percent and expires_at is not None and expires_at > asked_at:
        escalate_at = asked_at + (expires_at - asked_at) * (rule.escalate_at_percent / 100)
    return Route(
        rule=rule,
        user_ids=list(rule.user_ids),
        group_ids=list(rule.group_ids),
        remind_at=remind_at,
        escalate_at=escalate_at if (rule.escalate_user_ids or rule.escalate_group_ids) else None,
        escalate_user_ids=list(rule.escalate_user_ids),
        escalate_group_ids=list(rule.escalate_group_ids),
        notify_admins_on_expiry=rule.notify_admins_on_expiry,
    )


RULE_FIELDS = (
    "name",
    "enabled",
    "is_default",
    "tool_pattern",
    "risks",
    "session_metadata",
    "user_ids",
    "group_ids",
    "remind_after_minutes",
    "escalate_at_percent",
    "escalate_user_ids",
    "escalate_group_ids",
    "notify_admins_on_expiry",
)


class RoutingRules(BaseStore):
    """The tenant's routing rules: create, change, reorder, delete; each audited."""

    def rules(self):
        return RoutingRule.objects.filter(tenant=self.tenant).order_by(
            "-is_default", "position", "id"
        )

    def get(self, rule_id: int) -> RoutingRule:
        rule = RoutingRule.objects.filter(tenant=self.tenant, pk=rule_id).first()
        if rule is None:
            raise NotFound("No such routing rule.")
        return rule

    def save_rule(self, *, rule_id: int | None = None, **values: Any) -> RoutingRule:
        """Create a rule (last in order) or change `rule_id`; 422 with what is wrong."""
        unknown = set(values) - set(RULE_FIELDS)
        if unknown:
            raise TypeError(f"unknown rule fields: {sorted(unknown)}")
        with self.atomic():
            now = self.now()
            if rule_id is None:
                if RoutingRule.objects.filter(tenant=self.tenant).count() >= MAX_RULES:
                    raise Unprocessable(f"A tenant has at most {MAX_RULES} routing rules.")
                last = RoutingRule.objects.filter(tenant=self.tenant).aggregate(p=Max("position"))
                rule = RoutingRule(
                    tenant=self.tenant,
                    position=(last["p"] or 0) + 1,
                    created_at=now,
                )
                before = None
            else:
                rule = (
                    RoutingRule.objects.select_for_update()
                    .filter(tenant=self.tenant, pk=rule_id)
                    .first()
                )
                if rule is None:
                    raise NotFound("No such routing rule.")
                before = described(rule)
            for name, value in values.items():
                setattr(rule, name, value)
            rule.name = (rule.name or "").strip()
            rule.updated_at = now
            self._check(rule)
            if rule.is_default:
                RoutingRule.objects.filter(tenant=self.tenant, is_default=True).exclude(
                    pk=rule.pk
                ).update(is_default=False, updated_at=now)
            rule.save()
            self.audit(
                "routing_rule.saved",
                target_type="routing_rule",
                target_id=str(rule.pk),
                before=before,
                after=described(rule),
            )
        return rule

    def move(self, *, rule_id: int, position: int) -> None:
        """Put `rule_id` at `position` (1-based) among the rules; the others keep their order."""
        with self.atomic():
            rules = list(
                RoutingRule.objects.select_for_update()
                .filter(tenant=self.tenant)
                .order_by("position", "id")
            )
            moved = next((r for r in rules if r.pk == rule_id), None)
            if moved is None:
                raise NotFound("No such routing rule.")
            rules.remove(moved)
            rules.insert(max(0, min(position - 1, len(rules))), moved)
            for index, rule in enumerate(rules, start=1):
                if rule.position != index:
                    rule.position = index
                    rule.save(update_fields=["position"])
            self.audit(
                "routing_rule.moved",
                target_type="routing_rule",
                target_id=str(rule_id),
                after={"position": moved.position},
            )

    def delete_rule(self, *, rule_id: int) -> None:
        with self.atomic():
            rule = self.get(rule_id)
            before = described(rule)
            rule.delete()
            self.audit(
                "routing_rule.deleted",
                target_type="routing_rule",
                target_id=str(rule_id),
                before=before,
            )

    def _check(self, rule: RoutingRule) -> None:
        problems: dict[str, list[str]] = {}
        if not (rule.name or "").strip() or len(rule.name) > 200:
            problems["name"] = ["a name of 1 to 200 characters"]
        elif (
            RoutingRule.objects.filter(tenant=self.tenant, name=rule.name)
            .exclude(pk=rule.pk)
            .exists()
        ):
            problems["name"] = ["another rule has this name"]
        if len(rule.tool_pattern) > 200:
            problems["tool_pattern"] = ["at most 200 characters"]
        if bad := [r for r in rule.risks if r not in Risk.values]:
            problems["risks"] = [f"unknown risks {bad}: one of {Risk.values}"]
        metadata = rule.session_metadata
        if (
            not isinstance(metadata, dict)
            or len(metadata) > MAX_METADATA_KEYS
            or any(not isinstance(v, str | int | float | bool) for v in metadata.values())
        ):
            problems["session_metadata"] = [
                f"an object of at most {MAX_METADATA_KEYS} keys with plain values"
            ]
        members = set(
            Membership.objects.filter(tenant=self.tenant).values_list("user_id", flat=True)
        )
        groups = set(MemberGroup.objects.filter(tenant=self.tenant).values_list("pk", flat=True))
        for name, known in (
            ("user_ids", members),
            ("escalate_user_ids", members),
            ("group_ids", groups),
            ("escalate_group_ids", groups),
        ):
            if unknown := [i for i in getattr(rule, name) if i not in known]:
                problems[name] = [f"not of this tenant: {unknown}"]
        if rule.escalate_at_percent is not None and not 1 <= rule.escalate_at_percent <= 99:
            problems["escalate_at_percent"] = ["1 to 99 percent of the time to the deadline"]
        if rule.escalate_at_percent and not (rule.escalate_user_ids or rule.escalate_group_ids):
            problems.setdefault("escalate_group_ids", []).append("escalation needs someone")
        if rule.remind_after_minutes is not None and not 1 <= rule.remind_after_minutes <= 10080:
            problems["remind_after_minutes"] = ["1 minute to 7 days"]
        if problems:
            raise Unprocessable("The routing rule is not valid.", details=problems)


def described(rule: RoutingRule) -> dict[str, Any]:
    return {name: getattr(rule, name) for name in RULE_FIELDS} | {"position": rule.position}
