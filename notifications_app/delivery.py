"""Delivering a notice's notifications: build their messages, send them outside any
transaction, record what became of each.

`deliver_many(tenant_id, notification_ids, final_attempt=…)` (the task
`notifications_app.tasks.deliver_notifications`: the fan-out queues one per
notice, with the notice's notifications; at least once) reads, in one short
tenant transaction, the notifications with their channel, recipient and the
recipient's role (one query) and the approval they speak of (one lean query,
`ApprovalStore.for_notices`); a notification already sent, skipped or failed
is left alone (idempotent: a retry sends only what was not sent yet). The
channels' senders (`channels.sender(kind)`) are called with no transaction
open; a sender that can send a batch (`send_many`: email, over one SMTP
connection) gets all of its kind at once. What became of each is recorded in
one UPDATE (`NotificationStore.settle`): sent (when, where: `external_ref`),
or the attempt failed (tried again while `RetryableSendError` and not the
last attempt: the job raises it after recording; `SendRefused` is final).

What is no longer worth sending is skipped, with why: a notice asking for a
decision the approval no longer waits for, a recipient who left the tenant.
An `ended` notification made to rewrite a sent message calls the sender's
`update` with the message it rewrites. `deliver(tenant_id, notification_id)`
(the task `deliver_notification`, for jobs queued one per notification) is
`deliver_many` of one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from approvals_app.store import ApprovalStore
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant

from . import messages
from .channels import sender
from .channels.base import Message, RetryableSendError, SendRefused, Sent
from .fanout import ASKING, UPDATE_REF
from .models import Channel, Notification, NotificationStatus
from .store import DONE, NotificationStore, Outcome

RETRYING = "retrying"


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
    outcomes = deliver_many(tenant_id, [notification_id], final_attempt=final_attempt, clock=clock)
    return outcomes[notification_id]


def deliver_many(
    tenant_id: int,
    notification_ids: list[int],
    *,
    final_attempt: bool = True,
    clock: Callable[[], datetime] = timezone.now,
) -> dict[int, str]:
    """Deliver these notifications; what became of each (sent, refused, failed, skipped,
    no-sender, no-notification, or the status it already had). After recording every
    result, raises `RetryableSendError` when an attempt failed and may be tried again
    (not `final_attempt`): the retry sends only those still queued."""
    ids = [int(pk) for pk in dict.fromkeys(notification_ids)]
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return dict.fromkeys(ids, "no-tenant")
    store = NotificationStore(tenant, Actor.system("notifications"), clock=clock)
    with in_tenant(tenant):
        jobs, outcomes = prepare(store, ids)
    if not jobs:
        return outcomes
    results, unexpected = send_all(jobs, final_attempt=final_attempt)
    with in_tenant(tenant):
        store.settle([outcome for outcome, _ in results])
    outcomes.update({outcome.notification_id: said for outcome, said in results})
    if unexpected is not None:  # a sender's bug: what was done is recorded, the job fails
        raise unexpected
    retrying = [o for o, said in results if said == RETRYING]
    if retrying:
        raise RetryableSendError(f"{len(retrying)} to try again: {retrying[0].detail}")
    return outcomes


def prepare(store: NotificationStore, ids: list[int]) -> tuple[list[Job], dict[int, str]]:
    """The jobs of the notifications still waiting, and what became of the others (those
    not worth sending are recorded skipped, with why)."""
    found = store.for_delivery(ids)
    outcomes = dict.fromkeys(ids, "no-notification")
    waiting = []
    for notification in found:
        if notification.status in DONE:
            outcomes[notification.pk] = str(notification.status)
        else:
            waiting.append(notification)
    if not waiting:
        return [], outcomes
    builder = Builder(store, waiting)
    jobs, skipped = [], []
    for notification in waiting:
        job = builder.job(notification)
        if isinstance(job, Job):
            jobs.append(job)
        else:
            skipped.append(Outcome(notification.pk, NotificationStatus.SKIPPED, job, None, False))
            outcomes[notification.pk] = str(NotificationStatus.SKIPPED)
    store.settle(skipped)
    return jobs, outcomes


class Builder:
    """The messages of one batch: each approval read once (lean, `for_notices`), each
    message built once per (approval, notice, role), the sent messages to update."""

    def __init__(self, store: NotificationStore, waiting: list[Notification]) -> None:
        self.store = store
        self.approvals_store = ApprovalStore(store.tenant, store.actor, clock=store.now)
        approval_ids = {n.approval_id for n in waiting if n.kind != messages.TEST_KIND}
        self.approvals = self.approvals_store.for_notices(approval_ids) if approval_ids else {}
        targets = [_target_pk(n) for n in waiting if n.ref.startswith(UPDATE_REF)]
        self.targets = {t.pk: t for t in store.for_delivery(targets)} if targets else {}
        self.built: dict[tuple, Message] = {}
        self.digests: dict[str, str] = {}

    def job(self, notification: Notification) -> Job | str:
        """The notification's job, or why it is not worth sending."""
        if notification.recipient_id is not None and notification.role is None:
            return "the recipient is no longer a member"
        if notification.channel_id is None:
            return "the channel was deleted"
        if notification.kind == messages.TEST_KIND:
            message = messages.for_test(
                tenant=self.store.tenant, channel_name=notification.channel.name
            )
            return Job(notification, notification.channel, message)
        approval = self.approvals.get(notification.approval_id)
        if approval is None:
            return "the approval is gone"
        if notification.kind in ASKING and not approval.is_pending:
            return f"the approval is {approval.status}"
        target = None
        if notification.ref.startswith(UPDATE_REF):
            target = self.targets.get(_target_pk(notification))
            if target is None:
                return "the message to update is gone"
        message = self.message(approval, notification.kind, notification.role)
        return Job(notification, notification.channel, message, target)

    def message(self, approval, kind: str, role: str | None) -> Message:
        key = (approval.approval_id, kind, role)
        if key not in self.built:
            if approval.approval_id not in self.digests:
                self.digests[approval.approval_id] = self.approvals_store.digest(approval)
            self.built[key] = messages.for_approval(
                tenant=self.store.tenant,
                approval=approval,
                kind=kind,
                role=role,
                digest=self.digests[approval.approval_id],
            )
        return self.built[key]


def _target_pk(notification: Notification) -> int:
    return int(notification.ref.removeprefix(UPDATE_REF).split(":")[0])


def send_all(
    jobs: list[Job], *, final_attempt: bool
) -> tuple[list[tuple[Outcome, str]], Exception | None]:
    """Send every job, kind by kind (no transaction is open here: a slow server holds no
    lock); each job's outcome and what to say of it. A sender's unexpected error stops
    the sending: it is returned, with the outcomes of the jobs done before it."""
    by_kind: dict[str, list[Job]] = {}
    for job in jobs:
        by_kind.setdefault(job.notification.channel_kind, []).append(job)
    results: list[tuple[Outcome, str]] = []
    for kind, mine in by_kind.items():
        try:
            module = sender(kind)
        except LookupError as exc:
            results += [(_failed(j, str(exc)), "no-sender") for j in mine]
            continue
        fresh = [j for j in mine if j.target is None]
        in_order = fresh + [j for j in mine if j.target is not None]
        answers = _answers(module, fresh, in_order)
        try:
            for job in in_order:
                results.append(_outcome(job, next(answers), final_attempt))
        except Exception as exc:  # a bug: what was sent is recorded first
            return results, exc
    return results, None


def _answers(module, fresh: list[Job], in_order: list[Job]) -> Iterator[Sent | Exception]:
    """Each job's `Sent` (or the expected error it raised), in order, lazily: fresh
    messages in one batch when the sender can (`send_many`: e.g. over one
    connection), then rewrites one by one (`update`)."""
    batch = getattr(module, "send_many", None)
    if batch is not None and fresh:
        yield from batch([(j.channel, j.notification, j.message) for j in fresh])
    else:
        for job in fresh:
            yield _one(lambda j=job: module.send(j.channel, j.notification, j.message))
    for job in in_order[len(fresh) :]:
        yield _one(lambda j=job: _update(module, j))


def _update(module, job: Job) -> Sent:
    module.update(job.channel, job.target, job.message)
    return Sent(external_ref=None, detail="updated")


def _one(call: Callable[[], Sent]) -> Sent | Exception:
    try:
        return call()
    except (SendRefused, RetryableSendError) as exc:
        return exc


def _outcome(job: Job, answer: Sent | Exception, final_attempt: bool) -> tuple[Outcome, str]:
    pk = job.notification.pk
    if isinstance(answer, SendRefused):
        return _failed(job, f"refused: {answer}"), "refused"
    if isinstance(answer, RetryableSendError):
        if final_attempt:
            return _failed(job, str(answer)), "failed"
        return Outcome(pk, NotificationStatus.QUEUED, str(answer)), RETRYING
    return Outcome(pk, NotificationStatus.SENT, answer.detail, answer.external_ref), "sent"


def _failed(job: Job, detail: str) -> Outcome:
    return Outcome(job.notification.pk, NotificationStatus.FAILED, detail)
