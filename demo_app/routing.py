"""The demo's approval routing: groups, rules and an email channel, through their stores.

Each tenant gets a `payments-oncall` list (the operator and the admin take
turns weekly), an `operators` group, a rule sending payment calls of high and
critical risk to the on-call list (reminder after 10 minutes, escalation to
the admins' group at half the deadline), and a default rule to the operators.
Email goes to Django's console backend in the demo (printed by the server).
Loaded before the scenarios, so their approvals are routed and notified.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model

from approvals_app.models import RoutingRule
from approvals_app.routing import RoutingRules
from notifications_app.models import ChannelKind
from notifications_app.store import NotificationStore
from tenancy_app.groups import GroupStore
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

from .data import DEMO_ACTOR, demo_username


def load_routing(tenant: Tenant) -> bool:
    """Groups, rules and an email channel for `tenant`; False if it has rules already."""
    users = {
        role: get_user_model().objects.get(username=demo_username(tenant.slug, role)).pk
        for role in ("admin", "operator", "support")
    }
    with in_tenant(tenant):
        if RoutingRule.objects.filter(tenant=tenant).exists():
            return False
        groups = GroupStore(tenant, DEMO_ACTOR)
        oncall = groups.save_group(
            name="Payments on-call",
            slug="payments-oncall",
            user_ids=[users["operator"], users["admin"]],
            rotation_days=7,
        )
        operators = groups.save_group(
            name="Operators", slug="operators", user_ids=[users["operator"], users["admin"]]
        )
        admins = groups.save_group(name="Admins", slug="admins", user_ids=[users["admin"]])
        rules = RoutingRules(tenant, DEMO_ACTOR)
        rules.save_rule(
            name="Payments to the on-call",
            tool_pattern="payments.*",
            risks=["high", "critical"],
            group_ids=[oncall.pk],
            remind_after_minutes=10,
            escalate_at_percent=50,
            escalate_group_ids=[admins.pk],
            notify_admins_on_expiry=True,
        )
        rules.save_rule(
            name="Everything else to the operators",
            is_default=True,
            group_ids=[operators.pk],
            notify_admins_on_expiry=True,
        )
        notifications = NotificationStore(tenant, DEMO_ACTOR)
        notifications.save_channel(kind=ChannelKind.EMAIL, name="Team email")
        # Email for what is urgent, the console badge for the rest (the demo's server
        # prints each email).
        for role in ("admin", "operator"):
            notifications.save_preference(
                user_id=users[role],
                by_risk={
                    "low": ["console"],
                    "medium": ["console"],
                    "high": ["console", "email"],
                    "critical": ["console", "email"],
                },
                quiet_start=None,
                quiet_end=None,
            )
    return True
