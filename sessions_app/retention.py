"""Retention: content of ended sessions is deleted N days after they end, unless held.

A tenant's `RetentionPolicy` gives days per data class (null = keep forever)
and `extra_days_failed_or_approved`, added for sessions that had a failed run
or an approval request (those are the ones people investigate later). The
daily job (`sessions_app.tasks.apply_retention`) asks, per tenant, for
content deletions of the sessions that are due, one job per session covering
the classes due, with policy `retention:<class>=<days>[,...]`; the jobs then
run like manual deletions (receipts, audit, progress, legal-hold checks
between batches).

A session is due for a class when it is closed or expired, neither it nor
the tenant is on legal hold, no deletion of it is open, it ended before the
class's cutoff, and it still has content of that class. Selecting by
remaining content makes the job idempotent and also catches content written
late by runs that were still executing when an earlier deletion finished.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from approvals_app.models import ApprovalRequest, ApprovalStatus
from audit_app.actor import Actor
from effects_app.models import ExternalEffect
from runs_app.models import TERMINAL_RUN_STATUSES, Run, RunEvent, RunStatus
from stateroom.errors import Conflict
from tasks_app.models import TaskCheckpoint
from tenancy_app.models import RetentionPolicy, Tenant

from .deletion import (
    CHECKPOINT_BODIES,
    EFFECT_PAYLOADS,
    OPEN_STATUSES,
    RUN_EVENT_PAYLOADS,
    SESSION_ITEMS,
    ContentDeletionStore,
    remaining,
)
from .models import (
    TERMINAL_SESSION_STATUSES,
    ContentDeletion,
    Session,
    SessionAttachment,
    SessionItem,
    SessionStatus,
)

# (policy field, name in the receipt's policy string, data class of the deletion job)
RETENTION_CLASSES: tuple[tuple[str, str, str], ...] = (
    ("session_items_days", "session_items", SESSION_ITEMS),
    ("run_events_days", "run_events", RUN_EVENT_PAYLOADS),
    ("checkpoints_days", "checkpoints", CHECKPOINT_BODIES),
    ("effect_payloads_days", "effect_payloads", EFFECT_PAYLOADS),
)
DEFAULT_SESSIONS_PER_RUN = 50  # per class and per transaction
SAMPLE_SIZE = 10


def policy_for(tenant: Tenant) -> RetentionPolicy | None:
    return RetentionPolicy.objects.filter(tenant=tenant).first()


def _held_tasks(tenant: Tenant) -> QuerySet:
    return Run.objects.filter(tenant=tenant, session__legal_hold=True).values("task_id")


def _of_session_runs(tenant: Tenant, rows: QuerySet, run_path: str) -> Q:
    """Exists-condition on Session: some of `rows` belong to one of its runs.

    A session's runs are those created in it or attached to it (the same rule
    as `deletion.session_runs`); `run_path` leads from a row to its run.
    """
    via_session = rows.filter(**{f"{run_path}session": OuterRef("pk")})
    via_attachment = rows.filter(**{f"{run_path}run_id": OuterRef("run_id")})
    attachments = SessionAttachment.objects.filter(tenant=tenant, session=OuterRef("pk")).filter(
        Exists(via_attachment)
    )
    return Q(Exists(via_session)) | Q(Exists(attachments))


def _has_content(tenant: Tenant, data_class: str) -> Q:
    """Exists-condition on Session: it still has content of this class."""
    if data_class == SESSION_ITEMS:
        return Q(Exists(SessionItem.objects.filter(tenant=tenant, session=OuterRef("pk"))))
    if data_class == RUN_EVENT_PAYLOADS:
        rows = RunEvent.objects.filter(tenant=tenant, payload_deleted_at__isnull=True)
        return _of_session_runs(tenant, rows, "run__")
    if data_class == EFFECT_PAYLOADS:
        rows = ExternalEffect.objects.filter(tenant=tenant, redacted_at__isnull=True)
        return _of_session_runs(tenant, rows, "run__")
    if data_class == CHECKPOINT_BODIES:
        rows = TaskCheckpoint.objects.filter(tenant=tenant, body_deleted_at__isnull=True).exclude(
            task_id__in=_held_tasks(tenant)
        )
        return _of_session_runs(tenant, rows, "task__runs__")
    raise ValueError(f"unknown data class {data_class!r}")


def _flagged(tenant: Tenant) -> Q:
    """Sessions that get the extra days: a failed run or an approval request."""
    failed = Run.objects.filter(tenant=tenant, status=RunStatus.FAILED)
    approvals = ApprovalRequest.objects.filter(tenant=tenant)
    return _of_session_runs(tenant, failed, "") | _of_session_runs(tenant, approvals, "run__")


def due_sessions(
    tenant: Tenant, policy: RetentionPolicy, data_class_field: str, *, now: datetime
) -> QuerySet[Session]:
    """Sessions whose content of one class the policy says to delete now (held ones excluded)."""
    days = getattr(policy, data_class_field)
    data_class = next(cls for f, _, cls in RETENTION_CLASSES if f == data_class_field)
    cutoff = now - timedelta(days=days)
    ended = Session.objects.filter(
        tenant=tenant,
        status__in=TERMINAL_SESSION_STATUSES,
        legal_hold=False,
        ended_at__isnull=False,
    )
    if policy.extra_days_failed_or_approved:
        late_cutoff = cutoff - timedelta(days=policy.extra_days_failed_or_approved)
        ended = ended.filter(
            Q(ended_at__lt=late_cutoff) | (Q(ended_at__lt=cutoff) & ~_flagged(tenant))
        )
    else:
        ended = ended.filter(ended_at__lt=cutoff)
    open_deletions = ContentDeletion.objects.filter(
        tenant=tenant, session=OuterRef("pk"), status__in=OPEN_STATUSES
    )
    return ended.filter(_has_content(tenant, data_class)).exclude(Exists(open_deletions))


def policy_string(policy: RetentionPolicy, classes: list[str]) -> str:
    """`retention:<class>=<days>[,...]`, what a retention receipt records as its policy."""
    parts = [f"{name}={getattr(policy, f)}" for f, name, cls in RETENTION_CLASSES if cls in classes]
    return "retention:" + ",".join(parts)


def plan(tenant: Tenant, *, now: datetime, limit: int) -> dict[str, list[str]]:
    """session_id -> the data classes due now, at most `limit` sessions per class.

    Empty when the tenant has no policy or is on legal hold.
    """
    policy = policy_for(tenant)
    held = Tenant.objects.filter(pk=tenant.pk).values_list("legal_hold", flat=True).first()
    if policy is None or held:
        return {}
    due: dict[int, list[str]] = {}
    public_ids: dict[int, str] = {}
    for policy_field, _, data_class in RETENTION_CLASSES:
        if getattr(policy, policy_field) is None:
            continue
        sessions = due_sessions(tenant, policy, policy_field, now=now).order_by("pk")
        for pk, session_id in sessions.values_list("pk", "session_id")[:limit]:
            due.setdefault(pk, []).append(data_class)
            public_ids[pk] = session_id
    return {public_ids[pk]: due[pk] for pk in sorted(due)}


def apply(
    tenant: Tenant,
    *,
    now: datetime | None = None,
    limit: int = DEFAULT_SESSIONS_PER_RUN,
    actor: Actor | None = None,
) -> list[ContentDeletion]:
    """Request the deletions that are due (the caller is inside `in_tenant(tenant)`).

    At most `limit` sessions per class per call (callers loop, see
    `tasks.apply_retention`); each request enqueues its job on commit.
    Returns the jobs requested. A session put on hold since the plan was
    made gets a refused receipt and is skipped.
    """
    now = now or timezone.now()
    due = plan(tenant, now=now, limit=limit)
    if not due:
        return []
    policy = policy_for(tenant)
    store = ContentDeletionStore(tenant, actor or Actor.system("retention"))
    requested = []
    for session_id, classes in due.items():
        policy_label = policy_string(policy, classes)
        days = policy_label.removeprefix("retention:")
        try:
            deletion = store.request(
                session_id=session_id,
                reason=f"Retention policy ({days} days after the session ended).",
                policy=policy_label,
                classes=classes,
            )
        except Conflict as exc:
            if exc.code not in {"legal_hold", "deletion_in_progress"}:
                raise
            continue
        requested.append(deletion)
    return requested


def preview(
    tenant: Tenant,
    *,
    now: datetime | None = None,
    sample_size: int = SAMPLE_SIZE,
    policy: RetentionPolicy | None = None,
) -> dict:
    """Dry run for the console: what the next sweeps and the next retention run would touch.

    Counts and a sample of public ids; nothing is changed. `policy` (unsaved)
    previews values a person is still editing; otherwise the saved policy.
    The caller is inside the tenant (a console view, or `in_tenant`).
    """
    now = now or timezone.now()
    overdue_sessions = Session.objects.filter(
        tenant=tenant,
        status__in=[SessionStatus.ACTIVE, SessionStatus.IDLE],
        lease_until__lt=now,
    )
    overdue_approvals = ApprovalRequest.objects.filter(
        tenant=tenant, status=ApprovalStatus.PENDING, expires_at__lt=now
    )
    overdue_runs = Run.objects.filter(tenant=tenant, deadline_at__lt=now).exclude(
        status__in=TERMINAL_RUN_STATUSES
    )

    def sample(queryset: QuerySet, field_name: str) -> dict:
        return {
            "count": queryset.count(),
            "sample": list(
                queryset.order_by("pk").values_list(field_name, flat=True)[:sample_size]
            ),
        }

    policy = policy if policy is not None else policy_for(tenant)
    tenant_held = bool(
        Tenant.objects.filter(pk=tenant.pk).values_list("legal_hold", flat=True).first()
    )
    classes: dict[str, dict] = {}
    any_due = Q(pk__in=[])
    if policy is not None and not tenant_held:
        for policy_field, name, data_class in RETENTION_CLASSES:
            days = getattr(policy, policy_field)
            if days is None:
                continue
            due = due_sessions(tenant, policy, policy_field, now=now)
            any_due |= Q(pk__in=due.values("pk"))
            classes[data_class] = {
                "policy": f"{name}={days}",
                "days": days,
                "sessions": due.count(),
                "rows": remaining(tenant, due.values("pk"), data_class).count(),
                "sample": list(
                    due.order_by("pk").values_list("session_id", flat=True)[:sample_size]
                ),
            }
    all_due = Session.objects.filter(tenant=tenant).filter(any_due)
    held_sessions = Session.objects.filter(
        tenant=tenant, status__in=TERMINAL_SESSION_STATUSES, legal_hold=True
    ).count()
    return {
        "now": now,
        "sweep": {
            "sessions_to_expire": sample(overdue_sessions, "session_id"),
            "approvals_to_expire": sample(overdue_approvals, "approval_id"),
            "runs_to_fail": sample(overdue_runs, "run_id"),
        },
        "retention": {
            "configured": policy is not None,
            "tenant_legal_hold": tenant_held,
            "sessions_on_legal_hold": held_sessions,
            "classes": classes,
            "sessions": all_due.count() if classes else 0,
            "sample": (
                list(all_due.order_by("pk").values_list("session_id", flat=True)[:sample_size])
                if classes
                else []
            ),
        },
    }
