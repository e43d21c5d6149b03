"""Delivering one notification: build its message, send it outside any transaction, record.

`deliver(tenant_id, notification_id, final_attempt=…)` (the task
`notifications_app.tasks.deliver_notification`, at least once) reads the
notification and what its message says in one short tenant transaction; a
notification already sent, skipped or failed is left alone (idempotent). The
channel's sender (`channels.sender(kind)`) is called with no transaction
open; the result is recorded through `NotificationStore`: sent (when, where:
`external_ref`), or the attempt failed (retried while `RetryableSendError`
and not the last attempt; `SendRefused` is final).

What is no longer worth sending is skipped, with why: a notice asking for a
decision the approval no longer waits for, a recipient who left the tenant.
An `ended` notification made to rewrite a sent message calls the sender's
`update` with the message it rewrites.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from approvals_app.store import ApprovalStore
from stateroom.actor import Actor
from stateroom.errors import NotFound
from tenancy_app.models import Membership, Tenant
from tenancy_app.scoping import in_tenant

from . import messages
from .channels import sender
from .channels.base import Message, RetryableSendError, SendRefused
from .fanout import ASKING, UPDATE_REF
from .models import Channel, Notification, NotificationStatus
from .store import DONE, NotificationStore


@dataclass(frozen=True)
class Job:
    """What one delivery does: send `message` (or rewrite `target`, the sent one)."""

    notification: Notification
    channel: Channel | None
    message: Message
    target: Notification | None = None


def deliver(
    tenant_id: int,
    notification_id: int,
    *,
    final_attempt: bool = True,
    clock: Callable[[], datetime] = timezone.now,
) -> str:
    """Deliver one notification; what became of it. Raises `RetryableSendError` when the
    attempt failed and may be tried again (not `final_attempt`)."""
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return "no-tenant"
    store = NotificationStore(tenant, Actor.system("notifications"), clock=clock)
    with in_tenant(tenant):
        job = prepare(store, notification_id)
    if isinstance(job, str):
        return job
    try:
        module = sender(job.notification.channel_kind)
    except LookupError as exc:
        with in_tenant(tenant):
            store.mark_failed(notification_id, detail=str(exc), final=True)
        return "no-sender"
    try:  # no transaction is open here: a slow server holds no lock
        if job.target is not None:
            module.update(job.channel, job.target, job.message)
            external_ref, detail = None, "updated"
        else:
            sent = module.send(job.channel, job.notification, job.message)
            external_ref, detail = sent.external_ref, sent.detail
    except SendRefused as exc:
        with in_tenant(tenant):
            store.mark_failed(notification_id, detail=f"refused: {exc}", final=True)
        return "refused"
    except RetryableSendError as exc:
        with in_tenant(tenant):
            store.mark_failed(notification_id, detail=str(exc), final=final_attempt)
        if final_attempt:
            return "failed"
        raise
    with in_tenant(tenant):
        store.mark_sent(notification_id, external_ref=external_ref, detail=detail)
    return "sent"


def prepare(store: NotificationStore, notification_id: int) -> Job | str:
    """The job of one notification, or why there is none (recorded when it is skipped)."""
    try:
        notification = store.notification(notification_id)
    except NotFound:
        return "no-notification"
    if notification.status in DONE:
        return str(notification.status)
    why = None
    role = None
    if notification.recipient_id is not None:
        role = (
            Membership.objects.filter(tenant=store.tenant, user_id=notification.recipient_id)
            .values_list("role", flat=True)
            .first()
        )
        if role is None:
            why = "the recipient is no longer a member"
    if why is None and notification.channel_id is None:
        why = "the channel was deleted"
    if why is None and notification.kind == messages.TEST_KIND:
        message = messages.for_test(tenant=store.tenant, channel_name=notification.channel.name)
        return Job(notification, notification.channel, message)
    if why is None:
        job = _approval_job(store, notification, role)
        if isinstance(job, Job):
            return job
        why = job
    store.mark_skipped(notification_id, detail=why)
    return str(NotificationStatus.SKIPPED)


def _approval_job(store: NotificationStore, notification: Notification, role) -> Job | str:
    approvals = ApprovalStore(store.tenant, store.actor, clock=store.now)
    try:
        approval = approvals.get(notification.approval_id)
    except NotFound:
        return "the approval is gone"
    if notification.kind in ASKING and not approval.is_pending:
        return f"the approval is {approval.status}"
    message = messages.for_approval(
        tenant=store.tenant,
        approval=approval,
        kind=notification.kind,
        role=role,
        digest=approvals.digest(approval),
    )
    target = None
    if notification.ref.startswith(UPDATE_REF):
        target_pk = int(notification.ref.removeprefix(UPDATE_REF).split(":")[0])
        try:
            target = store.notification(target_pk)
        except NotFound:
            return "the message to update is gone"
    return Job(notification, notification.channel, message, target)
