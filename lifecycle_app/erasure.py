"""Erasure of a data subject: every session of one user closed and its content deleted.

`ErasureStore.request(user_id, reason)` finds every session of the user in
the tenant and, in one transaction: closes the live ones (their waiting runs
settled as any close does), requests a content deletion of each (policy
`erasure:<erasure_id>`, the same jobs, receipts and fences as a manual
deletion), and skips and lists the sessions on legal hold (or all of them,
when the tenant is on hold): a hold is an instruction to keep. A session
whose deletion is already running is listed with that deletion.

The erasure's status and receipt are read from its deletions (never stored
twice): `running` while one is open, then `done` (every deletion done),
or `failed` (one failed or was refused by a hold placed meanwhile: listed).
The receipt adds up the deletions' receipts.

The user id itself stays (on the session tombstones and here): it is what
the receipt is about, and what proves the erasure to the person who asked.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from sessions_app.models import TERMINAL_SESSION_STATUSES
from sessions_app.store import MAX_USER_ID_LENGTH, user_id_errors
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.ids import new_public_id
from stateroom.store import BaseStore
from tenancy_app.models import Tenant

from .content import CLASSES
from .deletion import (
    GENERAL_KEPT,
    MAX_REASON_LENGTH,
    DeletionStore,
    check_reason,
    receipt,
    shown_status,
)
from .endings import SessionEndings
from .models import OPEN_STATUSES, Deletion, DeletionStatus, Erasure

__all__ = ["MAX_REASON_LENGTH", "MAX_USER_ID_LENGTH", "ErasureStore"]
DELETING, HELD = "deleting", "held"


class ErasureStore(BaseStore):
    """Erasures of one tenant's data subjects."""

    def __init__(self, tenant: Tenant, actor, *, clock=None) -> None:
        kwargs = {"clock": clock} if clock is not None else {}
        super().__init__(tenant, actor, **kwargs)
        self.deletions = DeletionStore(tenant, actor, clock=self.now)
        self.endings = SessionEndings(tenant, actor, clock=self.now)
        self.sessions = self.deletions.owners.sessions

    # --- reads ---------------------------------------------------------------
    def get(self, erasure_id: str) -> Erasure:
        erasure = Erasure.objects.filter(tenant=self.tenant, erasure_id=erasure_id).first()
        if erasure is None:
            raise NotFound("No such erasure.", details={"erasure_id": erasure_id})
        return erasure

    def _user_sessions(self, user_id: str) -> QuerySet:
        return self.sessions.list_sessions(user_id=user_id).order_by("pk")

    def preview(self, *, user_id: str) -> dict[str, Any]:
        """What an erasure of this user would do now: how many sessions, live, ended, held."""
        _check_user_id(user_id)
        sessions = self._user_sessions(user_id)
        tenant_held = bool(
            Tenant.objects.filter(pk=self.tenant.pk).values_list("legal_hold", flat=True).first()
        )
        total = sessions.count()
        held = total if tenant_held else sessions.filter(legal_hold=True).count()
        return {
            "user_id": user_id,
            "sessions": total,
            "live": sessions.exclude(status__in=TERMINAL_SESSION_STATUSES).count(),
            "held": held,
            "tenant_legal_hold": tenant_held,
            "sample": list(sessions.values_list("session_id", flat=True)[:10]),
        }

    def deletions_of(self, erasure: Erasure) -> dict[str, Deletion]:
        ids = [entry["deletion_id"] for entry in erasure.sessions if entry.get("deletion_id")]
        return {
            deletion.deletion_id: deletion
            for deletion in Deletion.objects.filter(tenant=self.tenant, deletion_id__in=ids)
        }

    def state(self, erasure: Erasure) -> dict[str, Any]:
        """The erasure as the API and the console show it: per session, status, receipt."""
        now = self.now()
        deletions = self.deletions_of(erasure)
        sessions, held = [], []
        for entry in erasure.sessions:
            deletion = deletions.get(entry.get("deletion_id") or "")
            status = shown_status(deletion, now) if deletion is not None else HELD
            if entry["outcome"] == HELD or (
                deletion is not None and deletion.status == DeletionStatus.REFUSED
            ):
                held.append(entry["session_id"])
            sessions.append(
                {
                    "session_id": entry["session_id"],
                    "deletion_id": entry.get("deletion_id"),
                    "status": status,
                }
            )
        jobs = list(deletions.values())
        if any(job.status in OPEN_STATUSES for job in jobs):
            shown = [shown_status(job, now) for job in jobs]
            status = DeletionStatus.RUNNING if DeletionStatus.RUNNING in shown else "queued"
        elif any(job.status in (DeletionStatus.FAILED, DeletionStatus.REFUSED) for job in jobs):
            status = DeletionStatus.FAILED
        else:
            status = DeletionStatus.DONE
        return {
            "erasure_id": erasure.erasure_id,
            "user_id": erasure.user_id,
            "status": status,
            "requested_by": erasure.requested_by,
            "requested_at": erasure.created_at,
            "reason": erasure.reason,
            "sessions": sessions,
            "held": held,
            "progress": {
                "done": sum(sum(job.counts.values()) for job in jobs),
                "total": sum(sum(job.planned.values()) for job in jobs),
            },
            "receipt": _combined_receipt(jobs) if status == DeletionStatus.DONE else None,
        }

    # --- request -------------------------------------------------------------
    def request(self, *, user_id: str, reason: str) -> Erasure:
        """Close and delete every session of `user_id`, skipping (and listing) held ones."""
        _check_user_id(user_id)
        reason = check_reason(reason, "Say why the user is erased.")
        with transaction.atomic():
            tenant_held = bool(
                Tenant.objects.filter(pk=self.tenant.pk)
                .values_list("legal_hold", flat=True)
                .first()
            )
            erasure = Erasure.objects.create(
                tenant=self.tenant,
                erasure_id=new_public_id("era"),
                user_id=user_id,
                requested_by=self.actor.label,
                requested_by_id=self.actor.id if self.actor.kind == "user" else "",
                reason=reason,
                created_at=self.now(),
            )
            entries = []
            why = f"Erasure {erasure.erasure_id} of user {user_id}: {reason}"
            for session in self._user_sessions(user_id):
                if tenant_held or session.legal_hold:
                    entries.append(
                        {"session_id": session.session_id, "deletion_id": None, "outcome": HELD}
                    )
                    continue
                if not session.is_terminal:
                    self.endings.close(session_id=session.session_id, reason=why)
                entries.append(
                    {
                        "session_id": session.session_id,
                        "deletion_id": self._delete(session.session_id, why, erasure),
                        "outcome": DELETING,
                    }
                )
            erasure.sessions = entries
            erasure.save(update_fields=["sessions"])
            self.audit(
                "subject.erasure_requested",
                target_type="subject",
                target_id=user_id,
                after={
                    "erasure_id": erasure.erasure_id,
                    "sessions": [e["session_id"] for e in entries if e["outcome"] == DELETING],
                    "held": [e["session_id"] for e in entries if e["outcome"] == HELD],
                },
                reason=reason,
            )
        return erasure

    def _delete(self, session_id: str, reason: str, erasure: Erasure) -> str:
        try:
            return self.deletions.request(
                session_id=session_id,
                reason=reason,
                policy=f"erasure:{erasure.erasure_id}",
                erasure=erasure,
            ).deletion_id
        except Conflict as exc:
            if exc.code != "deletion_running":
                raise
            return exc.details["deletion_id"]


def _check_user_id(user_id: Any) -> None:
    """The data subject: a session's user id (sessions_app.store's rule)."""
    if errors := user_id_errors(user_id):
        raise Unprocessable(f"user_id must be 1-{MAX_USER_ID_LENGTH} characters.", details=errors)


def _combined_receipt(jobs: list[Deletion]) -> dict[str, Any]:
    deleted: dict[str, int] = {}
    tables: dict[str, dict[str, Any]] = {}
    for job in jobs:
        one = receipt(job)
        if one is None:
            continue
        for name, count in one["deleted"].items():
            deleted[name] = deleted.get(name, 0) + count
        for table in one["tables"]:
            into = tables.setdefault(table["table"], {"table": table["table"], "rows": 0})
            into["rows"] += table["rows"]
    return {
        "deleted": deleted,
        "tables": list(tables.values()),
        "kept": [
            *(
                {"class": name, "what": CLASSES[name].label, "why": CLASSES[name].kept}
                for name in deleted
                if name in CLASSES
            ),
            {
                "what": "The user id, on each session's tombstone and on this erasure",
                "why": "What the receipt is about: proof to the person that the erasure happened.",
            },
            *GENERAL_KEPT,
        ],
    }
