"""An admin tests a channel: one message to one admin on it, delivered as any other.

`send_test(tenant, actor, channel_id, user_id)` writes one notification of
kind `test` (no approval) to that admin on that channel, and its delivery job
(`notifications_app.tasks.deliver_notification`) in the same transaction;
audited `channel.tested`. Its status on the channel's trail says whether it
arrived.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.contrib.auth import get_user_model
from django.utils import timezone

from outbox_app.relay import enqueue
from stateroom.actor import Actor
from stateroom.errors import Unprocessable
from stateroom.ids import new_public_id
from tenancy_app.models import Membership, Role, Tenant

from .fanout import DELIVER_TASK
from .messages import TEST_KIND
from .models import ChannelKind
from .store import Draft, NotificationStore


def send_test(
    tenant: Tenant,
    actor: Actor,
    channel_id: str,
    user_id: int,
    *,
    clock: Callable[[], datetime] = timezone.now,
) -> int:
    """Queue a test message to admin `user_id` on channel `channel_id`; its notification id.
    404 for an unknown channel, 422 when the person is not an admin or has no address."""
    store = NotificationStore(tenant, actor, clock=clock)
    with store.atomic():
        channel = store.channel(channel_id)
        if not Membership.objects.filter(tenant=tenant, user_id=user_id, role=Role.ADMIN).exists():
            raise Unprocessable(
                "A test goes to an admin of this tenant.", details={"user_id": ["not an admin"]}
            )
        address = _address(store, channel, user_id)
        ids = store.record(
            [
                Draft(
                    approval_id="",
                    kind=TEST_KIND,
                    ref=new_public_id("tst"),
                    recipient_id=user_id,
                    channel_id=channel.pk,
                    channel_kind=channel.kind,
                    address=address,
                )
            ]
        )
        store.audit(
            "channel.tested",
            target_type="channel",
            target_id=channel.channel_id,
            after={"user_id": user_id, "kind": channel.kind},
        )
        enqueue(tenant=tenant, task=DELIVER_TASK, args=[tenant.pk, ids[0]])
    return ids[0]


def _address(store: NotificationStore, channel, user_id: int) -> str:
    if channel.kind == ChannelKind.EMAIL:
        email = get_user_model().objects.filter(pk=user_id).values_list("email", flat=True).first()
        if not email:
            raise Unprocessable(
                "This admin has no email address.", details={"user_id": ["no email address"]}
            )
        return email
    if channel.kind == ChannelKind.SLACK:
        linked = store.links(channel).filter(user_id=user_id).first()
        if linked is not None:
            return linked.external_user_id
        default = str(channel.config.get("channel") or "")
        if not default:
            raise Unprocessable(
                "Link this admin's Slack user, or set the channel's default channel.",
                details={"user_id": ["no linked Slack user"]},
            )
        return default
    return ""
