"""SessionStore's transitions: create, attach and detach runs, heartbeat, idle, and
the audited ends (close, expire, the lease sweep) and legal hold.

The semantics are seed 004's: `create` refuses a duplicate id;
`attach`/`detach` check tenant (another tenant's session is not found), user
(`session_scope_mismatch`), `expected_revision`, status and lease, the serial
policy and run ownership, each adding 1 to `revision`. Attach and heartbeat
move an idle session back to `active`.

`revision` counts changes of what a runtime builds on: the attachments (and
the metadata). Heartbeats, appends, close/expire and legal hold leave it
alone, so a runtime holding a revision learns *why* it was refused
(`session_not_attachable`, not a revision conflict) after an admin's close.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import IntegrityError

from audit_app.services import record_event
from stateroom import ports
from stateroom.errors import Conflict, Forbidden, NotFound, StateroomError, Unprocessable
from stateroom.ids import PUBLIC_ID_RULE, is_valid_public_id, new_public_id
from stateroom.leases import DEFAULT_SESSION_LEASE_SECONDS, MAX_SESSION_LEASE_SECONDS

from ..models import Session, SessionAttachment, SessionStatus
from .base import LIVE_STATUSES, OPEN_ATTACHMENTS_ATTR, SessionStoreBase
from .validation import (
    check_reason,
    json_problem,
    lease_errors,
    revision_errors,
    run_id_errors,
    user_id_errors,
)


class SessionTransitions(SessionStoreBase):
    def create(
        self,
        *,
        session_id: str | None = None,
        user_id: str,
        metadata: dict | None = None,
        lease_seconds: int | None = None,
    ) -> Session:
        """A new active session; its lease lasts `lease_seconds`, by default the tenant's."""
        errors: dict[str, list[str]] = {}
        if session_id is not None and not is_valid_public_id(session_id):
            errors["session_id"] = [PUBLIC_ID_RULE]
        errors.update(user_id_errors(user_id))
        if metadata is not None and not isinstance(metadata, dict):
            errors["metadata"] = ["must be an object"]
        elif problem := json_problem(metadata):
            errors["metadata"] = [problem]
        if lease_seconds is None:
            lease_seconds = self.default_lease_seconds()
        errors.update(lease_errors(lease_seconds))
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        now = self.now()
        session = Session(
            tenant=self.tenant,
            session_id=session_id or new_public_id("sess"),
            user_id=user_id,
            status=SessionStatus.ACTIVE,
            lease_until=now + timedelta(seconds=lease_seconds),
            lease_seconds=lease_seconds,
            revision=0,
            metadata=metadata or {},
            created_at=now,
            last_active_at=now,
        )
        try:
            with self.atomic():
                session.save(force_insert=True)
        except IntegrityError as exc:
            raise Conflict(
                "A session with this id already exists.",
                code="session_exists",
                details={"session_id": session.session_id},
            ) from exc
        setattr(session, OPEN_ATTACHMENTS_ATTR, [])
        return session

    def attach(
        self,
        *,
        session_id: str,
        run_id: str,
        user_id: str,
        expected_revision: int,
        lease_seconds: int | None = None,
    ) -> Session:
        """Mount a run on the session (seed 004 attach) and renew the lease.

        The run must exist in this tenant (404 otherwise, like a path id): a
        session names only runs that are there. `lease_seconds`, when given,
        becomes the session's lease length.
        """
        errors = run_id_errors(run_id) | revision_errors(expected_revision)
        if lease_seconds is not None:
            errors |= lease_errors(lease_seconds)
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        refusal: StateroomError | None = None
        with self.atomic():
            session = self._lock(session_id)
            self._require_run(run_id)
            self._authorize(session, user_id=user_id, expected_revision=expected_revision)
            now = self.now()
            if session.is_terminal or session.status == SessionStatus.CREATING:
                raise Conflict(
                    f"The session is {session.status} and takes no runs.",
                    code="session_not_attachable",
                    details={"status": session.status},
                )
            refusal = self._expire_if_lease_passed(session, now, code="session_not_attachable")
            if refusal is None:
                attached = list(self._open_attachments_query().filter(session=session))
                self._check_attachable(session, run_id, attached)
                attached.append(
                    SessionAttachment.objects.create(
                        tenant=self.tenant, session=session, run_id=run_id, attached_at=now
                    )
                )
                session.revision += 1
                session.status = SessionStatus.ACTIVE
                self._renew(session, now, lease_seconds)
                session.save(
                    update_fields=[
                        "revision",
                        "status",
                        "lease_until",
                        "lease_seconds",
                        "last_active_at",
                    ]
                )
                setattr(session, OPEN_ATTACHMENTS_ATTR, attached)
        if refusal is not None:
            raise refusal
        return session

    def detach(
        self, *, session_id: str, run_id: str, user_id: str, expected_revision: int
    ) -> Session:
        """Unmount a run; the session stays as it is (active), one revision later, lease renewed."""
        errors = run_id_errors(run_id) | revision_errors(expected_revision)
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        refusal: StateroomError | None = None
        with self.atomic():
            session = self._lock(session_id)
            self._require_run(run_id)
            self._authorize(session, user_id=user_id, expected_revision=expected_revision)
            self._refuse_terminal(session)
            now = self.now()
            refusal = self._expire_if_lease_passed(session, now, code="session_terminal")
            if refusal is None:
                attached = list(self._open_attachments_query().filter(session=session))
                mine = [a for a in attached if a.run_id == run_id]
                if not mine:
                    raise Conflict(
                        "This run is not attached to the session.",
                        code="run_not_attached",
                        details={
                            "run_id": run_id,
                            "attached_run_ids": [a.run_id for a in attached],
                        },
                    )
                SessionAttachment.objects.filter(pk=mine[0].pk).update(detached_at=now)
                session.revision += 1
                self._renew(session, now, None)
                session.save(update_fields=["revision", "lease_until", "last_active_at"])
                setattr(session, OPEN_ATTACHMENTS_ATTR, [a for a in attached if a.run_id != run_id])
        if refusal is not None:
            raise refusal
        return session

    def heartbeat(self, *, session_id: str, lease_seconds: int | None = None) -> Session:
        """Renew the lease (and wake an idle session); a passed lease is not renewable.

        `lease_seconds`, when given, becomes the session's lease length.
        """
        if lease_seconds is not None and (errors := lease_errors(lease_seconds)):
            raise Unprocessable("Some fields are invalid.", details=errors)
        refusal: StateroomError | None = None
        with self.atomic():
            session = self._lock(session_id)
            self._refuse_terminal(session)
            now = self.now()
            refusal = self._expire_if_lease_passed(session, now, code="session_terminal")
            if refusal is None:
                session.status = SessionStatus.ACTIVE
                self._renew(session, now, lease_seconds)
                session.save(
                    update_fields=["status", "lease_until", "lease_seconds", "last_active_at"]
                )
        if refusal is not None:
            raise refusal
        return session

    def mark_idle(self, *, session_id: str) -> Session:
        """active -> idle, for a session with no run attached (the runtime has nothing going on)."""
        refusal: StateroomError | None = None
        with self.atomic():
            session = self._lock(session_id)
            self._refuse_terminal(session)
            now = self.now()
            refusal = self._expire_if_lease_passed(session, now, code="session_terminal")
            if refusal is None:
                self._check_transition(session, SessionStatus.IDLE)
                if attached := self.attached_run_ids(session):
                    raise Conflict(
                        "A run is attached; the session is not idle.",
                        code="session_busy",
                        details={"attached_run_ids": attached},
                    )
                session.status = SessionStatus.IDLE
                session.save(update_fields=["status"])
        if refusal is not None:
            raise refusal
        return session

    def close(self, *, session_id: str, reason: str = "") -> Session:
        check_reason(reason)
        with self.atomic():
            session = self._lock(session_id)
            self._end(session, SessionStatus.CLOSED, reason=reason, actor=self.actor)
        return session

    def expire(self, *, session_id: str, reason: str = "") -> Session:
        check_reason(reason)
        with self.atomic():
            session = self._lock(session_id)
            self._end(session, SessionStatus.EXPIRED, reason=reason, actor=self.actor)
        return session

    def set_legal_hold(self, *, session_id: str, on: bool, reason: str) -> Session:
        """Hold (or release) the session's content against every deletion; works on ended sessions too."""
        check_reason(reason)
        with self.atomic():
            session = self._lock(session_id)
            if session.legal_hold == on:
                raise Conflict(
                    "Legal hold is already " + ("on." if on else "off."),
                    code="no_change",
                    details={"legal_hold": on},
                )
            session.legal_hold = on
            session.save(update_fields=["legal_hold"])
            self.audit(
                "session.legal_hold_on" if on else "session.legal_hold_off",
                target_type="session",
                target_id=session.session_id,
                before={"legal_hold": not on},
                after={"legal_hold": on},
                reason=reason,
            )
        return session

    def expire_overdue(self, *, limit: int = 500) -> list[Session]:
        """Sweep: expire up to `limit` live sessions past their lease; returns them.

        Rows another sweep holds are skipped (`SKIP LOCKED`), and each expiry is
        a conditional UPDATE, so two sweeps at once never expire (or audit) a
        session twice.
        """
        now = self.now()
        actor = self._system_actor("sweep")
        expired: list[Session] = []
        with self.atomic():
            candidates = list(
                Session.objects.select_for_update(skip_locked=True)
                .filter(tenant=self.tenant, status__in=LIVE_STATUSES, lease_until__lt=now)
                .order_by("lease_until", "id")[:limit]
            )
            for session in candidates:
                claimed = Session.objects.filter(
                    pk=session.pk, status__in=LIVE_STATUSES, lease_until__lt=now
                ).update(status=SessionStatus.EXPIRED, ended_at=now, end_reason="lease passed")
                if not claimed:
                    continue
                runs = self._close_attachments(session, now)
                record_event(
                    tenant=self.tenant,
                    actor=actor,
                    action="session.expired",
                    target_type="session",
                    target_id=session.session_id,
                    before={
                        "status": session.status,
                        "lease_until": session.lease_until.isoformat(),
                        "attached_run_ids": runs,
                    },
                    after={"status": SessionStatus.EXPIRED},
                    reason="lease passed",
                )
                session.status, session.ended_at = SessionStatus.EXPIRED, now
                session.end_reason = "lease passed"
                expired.append(session)
        return expired

    def default_lease_seconds(self) -> int:
        """The lease length of a new session: the tenant's, at most the maximum."""
        tenant_default = getattr(self.tenant, "session_lease_seconds", None)
        return min(tenant_default or DEFAULT_SESSION_LEASE_SECONDS, MAX_SESSION_LEASE_SECONDS)

    @staticmethod
    def _renew(session: Session, now, lease_seconds: int | None) -> None:
        """Activity: the lease runs for its length again from now (a new length if given)."""
        if lease_seconds is not None:
            session.lease_seconds = lease_seconds
        session.lease_until = now + timedelta(seconds=session.lease_seconds)
        session.last_active_at = now

    def _require_run(self, run_id: str) -> None:
        """A run id in a body names a run of this tenant (404 otherwise, as for a path id)."""
        if not ports.session_runs().exists(self.tenant, run_id):
            raise NotFound("No such run.", details={"run_id": run_id})

    def _authorize(self, session: Session, *, user_id: str, expected_revision: int) -> None:
        # The tenant check is the lookup itself: another tenant's session is not found.
        if session.user_id != user_id:
            raise Forbidden("The session belongs to another user.", code="session_scope_mismatch")
        if session.revision != expected_revision:
            raise Conflict(
                "The session changed since you read it.",
                code="revision_conflict",
                details={"current_revision": session.revision},
            )

    def _check_attachable(
        self, session: Session, run_id: str, attached: list[SessionAttachment]
    ) -> None:
        attached_ids = [a.run_id for a in attached]
        if run_id in attached_ids:
            raise Conflict(
                "This run is already attached to the session.",
                code="run_already_attached",
                details={"run_id": run_id},
            )
        if attached_ids and not self.tenant.allow_concurrent_runs:
            raise Conflict(
                "Another run is attached; this tenant runs one at a time per session.",
                code="session_busy",
                details={"attached_run_ids": attached_ids},
            )
        owner = ports.session_runs().session_pk(self.tenant, run_id)
        elsewhere = (
            SessionAttachment.objects.filter(
                tenant=self.tenant, run_id=run_id, detached_at__isnull=True
            )
            .exclude(session=session)
            .exists()
        )
        if (owner is not None and owner != session.pk) or elsewhere:
            raise Conflict(
                "This run belongs to another session.",
                code="run_not_attachable",
                details={"run_id": run_id},
            )
