"""Retention: content of ended sessions is deleted N days after they end, unless held.

A tenant's `RetentionPolicy` gives days per group of content (null = keep
forever) and `extra_days_failed_or_approved`, added for sessions that had a
failed run or an approval request (those are the ones people investigate
later). Each content class names the policy field that schedules it
(`ContentClass.retention`): `session_items_days` covers items and session
metadata; `run_events_days` run event payloads and errors, approval
payloads and the audit payloads; `checkpoints_days` checkpoint bodies and
task descriptions; `effect_payloads_days` effect payloads.

The daily job (`lifecycle_app.tasks.apply_retention`) asks, per tenant, for
content deletions of the sessions that are due, one job per session
covering the classes due, with policy `retention:<group>=<days>[,...]`; the
jobs then run like manual deletions (receipts, audit, progress, legal-hold
checks between batches).

A session is due for a group when it is closed or expired, neither it nor
the tenant is on legal hold, no deletion of it is open, it ended before the
group's cutoff, and no finished deletion has covered that group yet. A
deletion fences the session, its runs and tasks, so nothing is written to
them after it: a covered group stays empty, and the job is idempotent.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from approvals_app.store import ApprovalStore
from runs_app.store import RunStateStore
from sessions_app.models import Session
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.models import RetentionPolicy, Tenant

from .content import content_classes
from .deletion import DeletionStore
from .models import OPEN_STATUSES, Deletion, DeletionStatus

# (policy field, name in the receipt's policy string)
RETENTION_GROUPS: tuple[tuple[str, str], ...] = (
    ("session_items_days", "session_items"),
    ("run_events_days", "run_events"),
    ("checkpoints_days", "checkpoints"),
    ("effect_payloads_days", "effect_payloads"),
)
DEFAULT_SESSIONS_PER_RUN = 50  # per group and per transaction
SAMPLE_SIZE = 10


def classes_of(policy_field: str) -> list[str]:
    """The content classes a policy field schedules, in deletion order."""
    return [cls.name for cls in content_classes() if cls.retention == policy_field]


def policy_for(tenant: Tenant) -> RetentionPolicy | None:
    return RetentionPolicy.objects.filter(tenant=tenant).first()


def _flagged(tenant: Tenant, actor: Actor) -> Q:
    """Sessions that get the extra days: a failed run or an approval request.

    A session's runs are those created in it or attached to it.
    """
    runs = RunStateStore(tenant, actor)
    failed = runs.list_runs(status="failed")
    asked = ApprovalStore(tenant, actor).list_approvals()
    attached = SessionStore(tenant, actor).attachments_of_runs
    # No NULL in a subquery this is negated over: `NOT IN (…, NULL)` is never true.
    return (
        Q(pk__in=failed.filter(session__isnull=False).values("session_id"))
        | Q(pk__in=attached(failed.values("run_id")).values("session_id"))
        | Q(pk__in=asked.filter(run__session__isnull=False).values("run__session_id"))
        | Q(pk__in=attached(asked.values("run__run_id")).values("session_id"))
    )


def due_sessions(
    tenant: Tenant, policy: RetentionPolicy, policy_field: str, *, now: datetime
) -> QuerySet[Session]:
    """Sessions whose content of one group the policy says to delete now (held ones excluded)."""
    actor = Actor.system("retention")
    cutoff = now - timedelta(days=getattr(policy, policy_field))
    ended = SessionStore(tenant, actor).ended_not_held()
    if policy.extra_days_failed_or_approved:
        late_cutoff = cutoff - timedelta(days=policy.extra_days_failed_or_approved)
        ended = ended.filter(
            Q(ended_at__lt=late_cutoff) | (Q(ended_at__lt=cutoff) & ~_flagged(tenant, actor))
        )
    else:
        ended = ended.filter(ended_at__lt=cutoff)
    jobs = Deletion.objects.filter(tenant=tenant, session=OuterRef("pk"))
    covered = jobs.filter(status=DeletionStatus.DONE, planned__has_key=classes_of(policy_field)[0])
    return ended.exclude(Exists(jobs.filter(status__in=OPEN_STATUSES))).exclude(Exists(covered))


def policy_string(policy: RetentionPolicy, fields: list[str]) -> str:
    """`retention:<group>=<days>[,...]`, what a retention receipt records as its policy."""
    parts = [f"{name}={getattr(policy, f)}" for f, name in RETENTION_GROUPS if f in fields]
    return "retention:" + ",".join(parts)


def plan(tenant: Tenant, *, now: datetime, limit: int) -> dict[str, list[str]]:
    """session_id -> the policy fields due now, at most `limit` sessions per field.

    Empty when the tenant has no policy or is on legal hold.
    """
    policy = policy_for(tenant)
    held = Tenant.objects.filter(pk=tenant.pk).values_list("legal_hold", flat=True).first()
    if policy is None or held:
        return {}
    due: dict[int, list[str]] = {}
    public_ids: dict[int, str] = {}
    for policy_field, _ in RETENTION_GROUPS:
        if getattr(policy, policy_field) is None:
            continue
        sessions = due_sessions(tenant, policy, policy_field, now=now).order_by("pk")
        for pk, session_id in sessions.values_list("pk", "session_id")[:limit]:
            due.setdefault(pk, []).append(policy_field)
            public_ids[pk] = session_id
    return {public_ids[pk]: due[pk] for pk in sorted(due)}


def apply(
    tenant: Tenant,
    *,
    now: datetime | None = None,
    limit: int = DEFAULT_SESSIONS_PER_RUN,
    actor: Actor | None = None,
) -> list[Deletion]:
    """Request the deletions that are due (the caller is inside `in_tenant(tenant)`).

    At most `limit` sessions per group per call (callers loop, see
    `tasks.apply_retention`); each request enqueues its job on commit.
    Returns the jobs requested. A session put on hold since the plan was
    made gets a refused receipt and is skipped.
    """
    now = now or timezone.now()
    due = plan(tenant, now=now, limit=limit)
    if not due:
        return []
    policy = policy_for(tenant)
    store = DeletionStore(tenant, actor or Actor.system("retention"))
    requested = []
    for session_id, fields in due.items():
        label = policy_string(policy, fields)
        try:
            deletion = store.request(
                session_id=session_id,
                reason=f"Retention policy ({label.removeprefix('retention:')} days after the "
                "session ended).",
                policy=label,
                classes=[name for field in fields for name in classes_of(field)],
            )
        except Conflict as exc:
            if exc.code not in {"legal_hold", "deletion_running"}:
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
) -> dict[str, Any]:
    """Dry run for the console: what the next sweeps and the next retention run would touch.

    Counts and a sample of public ids; nothing is changed. `policy` (unsaved)
    previews values a person is still editing; otherwise the saved policy.
    The caller is inside the tenant (a console view, or `in_tenant`).
    """
    now = now or timezone.now()
    actor = Actor.system("retention preview")
    sessions = SessionStore(tenant, actor)
    policy = policy if policy is not None else policy_for(tenant)
    tenant_held = bool(
        Tenant.objects.filter(pk=tenant.pk).values_list("legal_hold", flat=True).first()
    )
    groups: dict[str, dict] = {}
    any_due = Q(pk__in=[])
    if policy is not None and not tenant_held:
        groups, any_due = _due_groups(tenant, policy, now=now, sample_size=sample_size)
    all_due = sessions.list_sessions().filter(any_due)
    return {
        "now": now,
        "sweep": _sweep_preview(tenant, actor, sessions, now=now, sample_size=sample_size),
        "retention": {
            "configured": policy is not None,
            "tenant_legal_hold": tenant_held,
            "sessions_on_legal_hold": sessions.ended_on_hold().count(),
            "classes": groups,
            "sessions": all_due.count() if groups else 0,
            "sample": (
                list(all_due.order_by("pk").values_list("session_id", flat=True)[:sample_size])
                if groups
                else []
            ),
        },
    }


def _sample(queryset: QuerySet, field_name: str, sample_size: int) -> dict:
    """How many rows, and the first public ids of them."""
    return {
        "count": queryset.count(),
        "sample": list(queryset.order_by("pk").values_list(field_name, flat=True)[:sample_size]),
    }


def _due_groups(
    tenant: Tenant, policy: RetentionPolicy, *, now: datetime, sample_size: int
) -> tuple[dict[str, dict], Q]:
    """Per retention group the policy sets: the sessions due; and a filter for all of them."""
    groups: dict[str, dict] = {}
    any_due = Q(pk__in=[])
    for policy_field, name in RETENTION_GROUPS:
        days = getattr(policy, policy_field)
        if days is None:
            continue
        due = due_sessions(tenant, policy, policy_field, now=now)
        any_due |= Q(pk__in=due.values("pk"))
        groups[name] = {
            "policy": f"{name}={days}",
            "days": days,
            "classes": classes_of(policy_field),
            "sessions": due.count(),
            "sample": list(due.order_by("pk").values_list("session_id", flat=True)[:sample_size]),
        }
    return groups, any_due


def _sweep_preview(
    tenant: Tenant, actor: Actor, sessions: SessionStore, *, now: datetime, sample_size: int
) -> dict[str, dict]:
    """What the next sweeps would expire or fail: sessions, approvals, runs."""
    overdue_approvals = ApprovalStore(tenant, actor).unswept(now=now)
    overdue_runs = RunStateStore(tenant, actor).list_runs().filter(deadline_at__lt=now)
    overdue_runs = overdue_runs.exclude(status__in=["succeeded", "failed", "cancelled"])
    return {
        "sessions_to_expire": _sample(sessions.overdue(now=now), "session_id", sample_size),
        "approvals_to_expire": _sample(overdue_approvals, "approval_id", sample_size),
        "runs_to_fail": _sample(overdue_runs, "run_id", sample_size),
    }
