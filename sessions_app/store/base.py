"""What every part of SessionStore shares: the status machine, the row lock, ending a session.

Status machine (DESIGN.md section 3), enforced by the store:

    creating -> active <-> idle -> closed | expired      (closed, expired: terminal)

Nothing moves a terminal session anywhere ("no silent re-activation"). A
write that finds the lease passed (`lease_until < now`) first expires the
session (audited as the system, `session.expired`) and then refuses; the
refusal (`SessionRefusal`) has `keep_changes = True`, so the expiry survives
the rollback of the failed request.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime

from django.db.models import QuerySet

from audit_app.services import record_event
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound
from stateroom.store import BaseStore

from ..models import Session, SessionAttachment, SessionStatus
from ..signals import session_ended

LIVE_STATUSES = (SessionStatus.ACTIVE, SessionStatus.IDLE)

SESSION_TRANSITIONS: dict[str, frozenset[str]] = {
    SessionStatus.CREATING: frozenset(
        {SessionStatus.ACTIVE, SessionStatus.CLOSED, SessionStatus.EXPIRED}
    ),
    SessionStatus.ACTIVE: frozenset(
        {SessionStatus.IDLE, SessionStatus.CLOSED, SessionStatus.EXPIRED}
    ),
    SessionStatus.IDLE: frozenset(
        {SessionStatus.ACTIVE, SessionStatus.CLOSED, SessionStatus.EXPIRED}
    ),
    SessionStatus.CLOSED: frozenset(),
    SessionStatus.EXPIRED: frozenset(),
}

# Open attachments in attach order; `list_sessions` prefetches them into
# `session.open_attachments` so a page of sessions costs one extra query.
OPEN_ATTACHMENTS_ATTR = "open_attachments"


class SessionRefusal(Conflict):
    """A refusal that recorded a fact on the way (the session expired): kept on rollback."""

    keep_changes = True


def not_found(session_id: str) -> NotFound:
    return NotFound("No such session.", details={"session_id": session_id})


class SessionStoreBase(BaseStore):
    def attached_run_ids(self, session: Session) -> list[str]:
        prefetched = getattr(session, OPEN_ATTACHMENTS_ATTR, None)
        if prefetched is not None:
            return [attachment.run_id for attachment in prefetched]
        return list(
            self._open_attachments_query().filter(session=session).values_list("run_id", flat=True)
        )

    def _open_attachments_query(self) -> QuerySet[SessionAttachment]:
        return SessionAttachment.objects.filter(
            tenant=self.tenant, detached_at__isnull=True
        ).order_by("attached_at", "id")

    def _lock(self, session_id: str) -> Session:
        session = (
            Session.objects.select_for_update()
            .filter(tenant=self.tenant, session_id=session_id)
            .first()
        )
        if session is None:
            raise not_found(session_id)
        return session

    def _refuse_terminal(self, session: Session) -> None:
        if session.is_terminal:
            raise Conflict(
                f"The session is {session.status}.",
                code="session_terminal",
                details={"status": session.status},
            )

    def _check_transition(self, session: Session, target: str) -> None:
        self._refuse_terminal(session)
        if target not in SESSION_TRANSITIONS[session.status]:
            raise Conflict(
                f"A session cannot go from {session.status} to {target}.",
                code="invalid_transition",
                details={"status": session.status, "target": target},
            )

    def _expire_if_lease_passed(
        self, session: Session, now: datetime, *, code: str
    ) -> SessionRefusal | None:
        """Expire a live session whose lease has passed; return the refusal to raise after commit."""
        if session.lease_until >= now:
            return None
        lease_until = session.lease_until
        self._end(
            session,
            SessionStatus.EXPIRED,
            reason="lease passed",
            actor=self._system_actor("lease"),
            now=now,
        )
        return SessionRefusal(
            "The session's lease has passed; it is expired.",
            code=code,
            details={"status": SessionStatus.EXPIRED, "lease_until": lease_until.isoformat()},
        )

    def _end(
        self,
        session: Session,
        status: str,
        *,
        reason: str,
        actor: Actor,
        now: datetime | None = None,
    ) -> None:
        """closed/expired: close the open attachments, save, audit, and send `session_ended`
        (the layers above settle what waited on the session). Caller holds the row lock."""
        self._check_transition(session, status)
        now = now or self.now()
        before = {"status": session.status, "lease_until": session.lease_until.isoformat()}
        runs = self._close_attachments(session, now)
        session.status = status
        session.ended_at = now
        session.end_reason = reason or ""
        session.save(update_fields=["status", "ended_at", "end_reason"])
        setattr(session, OPEN_ATTACHMENTS_ATTR, [])
        record_event(
            tenant=self.tenant,
            actor=actor,
            action=f"session.{status}",
            target_type="session",
            target_id=session.session_id,
            before={**before, "attached_run_ids": runs},
            after={"status": status},
            reason=reason,
        )
        session_ended.send(
            sender=type(self), tenant=self.tenant, session=session, actor=actor, clock=self.now
        )

    def _close_attachments(self, session: Session, now: datetime) -> list[str]:
        open_attachments = self._open_attachments_query().filter(session=session)
        runs = list(open_attachments.values_list("run_id", flat=True))
        if runs:
            SessionAttachment.objects.filter(
                tenant=self.tenant, session=session, detached_at__isnull=True
            ).update(detached_at=now)
        return runs

    def _system_actor(self, label: str) -> Actor:
        """Lifecycle transitions the system makes are audited as the system, traced to the request."""
        if self.actor.kind == "system":
            return self.actor
        return dataclasses.replace(
            Actor.system(label), request_id=self.actor.request_id or uuid.uuid4().hex
        )
