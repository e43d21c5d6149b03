"""SessionStore: every state change of the session domain, and its scoped reads.

The semantics are seed 004's SessionStore: `create` refuses a duplicate id;
`attach`/`detach` check tenant (another tenant's session is not found), user
(`session_scope_mismatch`), `expected_revision`, status and lease, the serial
policy and run ownership, each adding 1 to `revision`.

Status machine (DESIGN.md section 3), enforced here:

    creating -> active <-> idle -> closed | expired      (closed, expired: terminal)

- Attach, heartbeat and append move an idle session back to `active`;
  nothing moves a terminal session anywhere ("no silent re-activation").
- `revision` counts changes of what a runtime builds on: the attachments (and
  the metadata). Heartbeats, appends, close/expire and legal hold leave it
  alone, so a runtime holding a revision learns *why* it was refused
  (`session_not_attachable`, not a revision conflict) after an admin's close.
- A write that finds the lease passed (`lease_until < now`) first expires the
  session (audited as the system, `session.expired`) and then refuses; the
  refusal has `keep_changes = True`, so the expiry survives the rollback of the
  failed request.

Error codes: 409 `session_terminal` for any write other than attach that
reaches a closed/expired session (heartbeat, detach, close, expire, append,
mark_idle); attach says `session_not_attachable` as the API contract demands.
Both carry `details.status`.

Audited (one event each, in the change's transaction): `session.closed`,
`session.expired` (admin, lease found passed, sweep), `session.legal_hold_on`
and `session.legal_hold_off`. Runtime writes (create, attach, detach,
heartbeat, append) are not audited: the attachment rows and items are their
record.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Prefetch, Q, QuerySet

from audit_app.actor import Actor
from audit_app.services import record_event
from runs_app.models import Run
from stateroom.errors import Conflict, Forbidden, NotFound, StateroomError, Unprocessable
from stateroom.ids import is_valid_public_id, new_public_id
from stateroom.sql import hot_cursor
from tenancy_app.base_store import BaseStore

from .models import (
    TERMINAL_SESSION_STATUSES,
    ItemAppend,
    Session,
    SessionAttachment,
    SessionItem,
    SessionStatus,
)

_SESSIONS = Session._meta.db_table
_ITEMS = SessionItem._meta.db_table
_APPENDS = ItemAppend._meta.db_table
_ATTACHMENTS = SessionAttachment._meta.db_table
_RUNS = Run._meta.db_table

DEFAULT_LEASE_SECONDS = 3600
MAX_LEASE_SECONDS = 86400
MAX_ITEMS_PER_APPEND = 1000
MAX_USER_ID_LENGTH = 128
MAX_ROLE_LENGTH = 32
MAX_ITEM_TYPE_LENGTH = 64
MAX_IDEMPOTENCY_KEY_LENGTH = 200

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


@dataclass
class StoredItem:
    """A conversation item as read: what API, console and export show of it.

    A plain object, not a model: building 50 of these is a fraction of what
    50 SessionItem instances cost. Views may hang display attributes on it.
    """

    seq: int
    role: str
    item_type: str
    payload: dict[str, Any]
    run_id: str
    created_at: datetime


@dataclass(frozen=True)
class AppendResult:
    first_seq: int
    last_seq: int
    created: bool


class SessionStore(BaseStore):
    # --- reads --------------------------------------------------------------
    def get(self, session_id: str) -> Session:
        session = Session.objects.filter(tenant=self.tenant, session_id=session_id).first()
        if session is None:
            raise _not_found(session_id)
        return session

    def list_sessions(
        self,
        *,
        status: str | None = None,
        user_id: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
        search: str | None = None,
    ) -> QuerySet[Session]:
        """Sessions of this tenant, filtered; unordered (callers keyset by id).

        Open attachments are prefetched, so `attached_run_ids` costs no query per row.
        """
        if status is not None and status not in SessionStatus.values:
            raise Unprocessable(
                "Unknown session status.",
                details={"status": [f"must be one of {', '.join(SessionStatus.values)}"]},
            )
        queryset = Session.objects.filter(tenant=self.tenant)
        if status:
            queryset = queryset.filter(status=status)
        if user_id:
            queryset = queryset.filter(user_id=user_id)
        if created_from is not None:
            queryset = queryset.filter(created_at__gte=created_from)
        if created_to is not None:
            queryset = queryset.filter(created_at__lt=created_to)
        if search:
            queryset = queryset.filter(
                Q(session_id__icontains=search) | Q(user_id__icontains=search)
            )
        return queryset.prefetch_related(
            Prefetch(
                "attachments",
                queryset=self._open_attachments_query(),
                to_attr=OPEN_ATTACHMENTS_ATTR,
            )
        )

    def attached_run_ids(self, session: Session) -> list[str]:
        prefetched = getattr(session, OPEN_ATTACHMENTS_ATTR, None)
        if prefetched is not None:
            return [attachment.run_id for attachment in prefetched]
        return list(
            self._open_attachments_query().filter(session=session).values_list("run_id", flat=True)
        )

    def attachments(self, session: Session) -> QuerySet[SessionAttachment]:
        """Every attachment of the session, open and past, in attach order."""
        return SessionAttachment.objects.filter(tenant=self.tenant, session=session).order_by(
            "attached_at", "id"
        )

    def get_items(
        self,
        *,
        session_id: str,
        limit: int = 50,
        after_seq: int | None = None,
        before_seq: int | None = None,
    ) -> list[StoredItem]:
        """Items in ascending `seq`.

        With `before_seq`: the `limit` items just before it (still ascending),
        i.e. the previous page; `after_seq` then only bounds it from below.
        Hot path: one statement on the unique index (tenant, session, seq),
        rows read into `StoredItem`s; an unknown session is told apart from
        an empty page only when the page is empty.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise Unprocessable("limit must be a positive integer.", details={"limit": ["min 1"]})
        sql = (
            f"SELECT seq, role, item_type, payload, run_id, created_at FROM {_ITEMS}"
            f" WHERE tenant_id = %s AND session_id = (SELECT id FROM {_SESSIONS}"
            " WHERE tenant_id = %s AND session_id = %s)"
        )
        params: list[Any] = [self.tenant.pk, self.tenant.pk, session_id]
        if after_seq is not None:
            sql += " AND seq > %s"
            params.append(after_seq)
        if before_seq is not None:
            sql += " AND seq < %s ORDER BY seq DESC LIMIT %s"
            params += [before_seq, limit]
        else:
            sql += " ORDER BY seq LIMIT %s"
            params.append(limit)
        with hot_cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        if (
            not rows
            and not Session.objects.filter(tenant=self.tenant, session_id=session_id).exists()
        ):
            raise _not_found(session_id)
        if before_seq is not None:
            rows.reverse()
        loads = json.loads
        return [
            StoredItem(seq, role, item_type, loads(payload), run_id, created_at)
            for seq, role, item_type, payload, run_id, created_at in rows
        ]

    # --- runtime writes -----------------------------------------------------
    def create(
        self,
        *,
        session_id: str | None = None,
        user_id: str,
        metadata: dict | None = None,
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
    ) -> Session:
        errors: dict[str, list[str]] = {}
        if session_id is not None and not is_valid_public_id(session_id):
            errors["session_id"] = ["must be 1-128 characters of A-Z a-z 0-9 . _ : -"]
        if not _is_short_text(user_id, MAX_USER_ID_LENGTH):
            errors["user_id"] = [f"must be a non-empty string of at most {MAX_USER_ID_LENGTH}"]
        if metadata is not None and not isinstance(metadata, dict):
            errors["metadata"] = ["must be an object"]
        elif problem := _json_problem(metadata):
            errors["metadata"] = [problem]
        errors.update(_lease_errors(lease_seconds))
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        now = self.now()
        session = Session(
            tenant=self.tenant,
            session_id=session_id or new_public_id("sess"),
            user_id=user_id,
            status=SessionStatus.ACTIVE,
            lease_until=now + timedelta(seconds=lease_seconds),
            revision=0,
            metadata=metadata or {},
            created_at=now,
            last_active_at=now,
        )
        try:
            with transaction.atomic():
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
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
    ) -> Session:
        """Mount a run on the session (seed 004 attach) and renew the lease."""
        errors = _run_id_errors(run_id) | _revision_errors(expected_revision)
        errors |= _lease_errors(lease_seconds)
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        refusal: StateroomError | None = None
        with transaction.atomic():
            session = self._lock(session_id)
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
                session.lease_until = now + timedelta(seconds=lease_seconds)
                session.last_active_at = now
                session.save(update_fields=["revision", "status", "lease_until", "last_active_at"])
                setattr(session, OPEN_ATTACHMENTS_ATTR, attached)
        if refusal is not None:
            raise refusal
        return session

    def detach(
        self, *, session_id: str, run_id: str, user_id: str, expected_revision: int
    ) -> Session:
        """Unmount a run; the session stays as it is (active), one revision later."""
        errors = _run_id_errors(run_id) | _revision_errors(expected_revision)
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        refusal: StateroomError | None = None
        with transaction.atomic():
            session = self._lock(session_id)
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
                session.last_active_at = now
                session.save(update_fields=["revision", "last_active_at"])
                setattr(session, OPEN_ATTACHMENTS_ATTR, [a for a in attached if a.run_id != run_id])
        if refusal is not None:
            raise refusal
        return session

    def heartbeat(self, *, session_id: str, lease_seconds: int | None = None) -> Session:
        """Renew the lease (and wake an idle session); a passed lease is not renewable."""
        lease_seconds = DEFAULT_LEASE_SECONDS if lease_seconds is None else lease_seconds
        if errors := _lease_errors(lease_seconds):
            raise Unprocessable("Some fields are invalid.", details=errors)
        refusal: StateroomError | None = None
        with transaction.atomic():
            session = self._lock(session_id)
            self._refuse_terminal(session)
            now = self.now()
            refusal = self._expire_if_lease_passed(session, now, code="session_terminal")
            if refusal is None:
                session.status = SessionStatus.ACTIVE
                session.lease_until = now + timedelta(seconds=lease_seconds)
                session.last_active_at = now
                session.save(update_fields=["status", "lease_until", "last_active_at"])
        if refusal is not None:
            raise refusal
        return session

    def mark_idle(self, *, session_id: str) -> Session:
        """active -> idle, for a session with no run attached (the runtime has nothing going on)."""
        refusal: StateroomError | None = None
        with transaction.atomic():
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

    def append_items(
        self,
        *,
        session_id: str,
        items: list[dict],
        run_id: str = "",
        idempotency_key: str | None = None,
    ) -> AppendResult:
        """Append conversation items with gap-free, commit-ordered `seq`s.

        Hot path: one statement (`_append_in_one_statement`) claims the seqs
        with a conditional `UPDATE … SET last_seq = last_seq + n … RETURNING`
        (its row lock serializes appenders of the session until commit, so
        seqs are handed out in commit order and a rolled-back append returns
        its seqs), records the idempotency key and inserts the items. When it
        matches nothing, `_refuse_append` says why, or replays a known key.
        """
        rows = _validated_items(items)
        errors: dict[str, list[str]] = {}
        if run_id and not is_valid_public_id(run_id):
            errors["run_id"] = ["must be 1-128 characters of A-Z a-z 0-9 . _ : -"]
        if idempotency_key is not None and not _is_short_text(
            idempotency_key, MAX_IDEMPOTENCY_KEY_LENGTH
        ):
            errors["idempotency_key"] = [
                f"must be a non-empty string of at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters"
            ]
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        digest = _request_digest(rows, run_id) if idempotency_key is not None else ""
        for _attempt in range(3):
            now = self.now()
            appended = self._append_in_one_statement(
                session_id, rows, run_id, idempotency_key, digest, now
            )
            if appended is not None:
                return appended
            replayed = self._refuse_append(session_id, run_id, idempotency_key, digest)
            if replayed is not None:
                return replayed
        raise Conflict("The session changed while appending; retry.", code="append_contention")

    # --- lifecycle (audited) ------------------------------------------------
    def close(self, *, session_id: str, reason: str = "") -> Session:
        _check_reason(reason)
        with transaction.atomic():
            session = self._lock(session_id)
            self._end(session, SessionStatus.CLOSED, reason=reason, actor=self.actor)
        return session

    def expire(self, *, session_id: str, reason: str = "") -> Session:
        _check_reason(reason)
        with transaction.atomic():
            session = self._lock(session_id)
            self._end(session, SessionStatus.EXPIRED, reason=reason, actor=self.actor)
        return session

    def set_legal_hold(self, *, session_id: str, on: bool, reason: str) -> Session:
        """Hold (or release) the session's content against every deletion; works on ended sessions too."""
        _check_reason(reason)
        with transaction.atomic():
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

    def expire_overdue(self, *, limit: int = 500) -> int:
        """Sweep: expire up to `limit` live sessions past their lease; returns how many.

        Rows another sweep holds are skipped (`SKIP LOCKED`), and each expiry is
        a conditional UPDATE, so two sweeps at once never expire (or audit) a
        session twice.
        """
        now = self.now()
        actor = self._system_actor("sweep")
        expired = 0
        with transaction.atomic():
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
                expired += 1
        return expired

    # --- internals ----------------------------------------------------------
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
            raise _not_found(session_id)
        return session

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
        # Read the run table directly: a run that does not exist yet may be attached.
        owner = (
            Run.objects.filter(tenant=self.tenant, run_id=run_id)
            .values_list("session_id", flat=True)
            .first()
        )
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
        """closed/expired: close the open attachments, save, audit. Caller holds the row lock."""
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

    def _claim_sql(
        self, session_id: str, count: int, run_id: str, now: datetime
    ) -> tuple[str, list[Any]]:
        """The conditional UPDATE that claims `count` seqs of a writable session.

        Raw SQL for `RETURNING`; RLS still applies on PostgreSQL, and the
        tenant is filtered explicitly as everywhere else.
        """
        sql = (
            f"UPDATE {_SESSIONS} SET last_seq = last_seq + %s, last_active_at = %s, status = %s"
            f" WHERE tenant_id = %s AND session_id = %s AND status IN (%s, %s)"
            f" AND lease_until >= %s AND content_deleted_at IS NULL"
        )
        params: list[Any] = [
            count,
            now,
            SessionStatus.ACTIVE.value,
            self.tenant.pk,
            session_id,
            *(s.value for s in LIVE_STATUSES),
            now,
        ]
        if run_id:
            # The writing run must be attached to this session, or be one of its runs.
            sql += (
                f" AND (EXISTS (SELECT 1 FROM {_ATTACHMENTS} a WHERE a.tenant_id = %s"
                f" AND a.session_id = {_SESSIONS}.id AND a.run_id = %s AND a.detached_at IS NULL)"
                f" OR EXISTS (SELECT 1 FROM {_RUNS} r WHERE r.tenant_id = %s AND r.run_id = %s"
                f" AND r.session_id = {_SESSIONS}.id))"
            )
            params += [self.tenant.pk, run_id, self.tenant.pk, run_id]
        return sql, params

    def _append_in_one_statement(
        self,
        session_id: str,
        rows: list[dict[str, Any]],
        run_id: str,
        idempotency_key: str | None,
        digest: str,
        now: datetime,
    ) -> AppendResult | None:
        """PostgreSQL: claim the seqs, record the key and insert the items in one statement.

        The claim is `_claim_sql`'s conditional UPDATE, which also refuses a
        key this session already recorded; the key and the items are inserted
        from its RETURNING row in the same statement. None when the session is
        not writable or the key is known (the caller finds out which).

        Two requests racing with one new key: the second waits on the session
        row, and its key INSERT then meets the first's committed key. Its claim
        is undone in the same transaction (it still holds the row lock, so no
        other append came in between) and the first's seqs are replayed.
        """
        count = len(rows)
        sql, params = self._claim_sql(session_id, count, run_id, now)
        if idempotency_key is not None:
            sql += (
                f" AND NOT EXISTS (SELECT 1 FROM {_APPENDS} k WHERE k.tenant_id = %s"
                f" AND k.session_id = {_SESSIONS}.id AND k.idempotency_key = %s)"
            )
            params += [self.tenant.pk, idempotency_key]
            recorded = (
                f"INSERT INTO {_APPENDS} (tenant_id, session_id, idempotency_key, request_digest,"
                " first_seq, last_seq, created_at)"
                " SELECT %s, s.id, %s, %s, s.last_seq - %s + 1, s.last_seq, %s FROM s"
                " ON CONFLICT (tenant_id, session_id, idempotency_key) DO NOTHING RETURNING id"
            )
            params += [self.tenant.pk, idempotency_key, digest, count, now]
            gate = " AND EXISTS (SELECT 1 FROM k)"
        else:
            recorded = "SELECT 1 AS id"
            gate = ""
        params += [
            self.tenant.pk,
            count,
            run_id,
            now,
            [row["role"] for row in rows],
            [row["item_type"] for row in rows],
            [json.dumps(row["payload"]) for row in rows],
        ]
        statement = (
            f"WITH s AS ({sql} RETURNING id, last_seq), k AS ({recorded}),"
            f" i AS (INSERT INTO {_ITEMS} (tenant_id, session_id, seq, role, item_type, payload,"
            " run_id, created_at)"
            " SELECT %s, s.id, s.last_seq - %s + u.ord, u.role, u.item_type, u.payload::jsonb, %s, %s"
            " FROM s, unnest(%s::text[], %s::text[], %s::text[])"
            f" WITH ORDINALITY AS u(role, item_type, payload, ord) WHERE true{gate})"
            " SELECT s.id, s.last_seq, EXISTS (SELECT 1 FROM k) FROM s"
        )
        with transaction.atomic(savepoint=False), hot_cursor() as cursor:
            cursor.execute(statement, params)
            claimed = cursor.fetchone()
            if claimed is None:
                return None
            session_pk, last_seq, was_recorded = claimed
            if was_recorded:
                return AppendResult(last_seq - count + 1, last_seq, created=True)
            cursor.execute(
                f"UPDATE {_SESSIONS} SET last_seq = last_seq - %s WHERE id = %s AND tenant_id = %s",
                [count, session_pk, self.tenant.pk],
            )
        previous = self._previous_append(session_id, idempotency_key)
        if previous is None:  # pragma: no cover - the key's row was just seen
            raise Conflict("The session changed while appending; retry.", code="append_contention")
        return _replay(previous, digest)

    def _previous_append(self, session_id: str, idempotency_key: str | None) -> ItemAppend | None:
        if idempotency_key is None:
            return None
        return ItemAppend.objects.filter(
            tenant=self.tenant,
            session__session_id=session_id,
            idempotency_key=idempotency_key,
        ).first()

    def _refuse_append(
        self, session_id: str, run_id: str, idempotency_key: str | None, digest: str
    ) -> AppendResult | None:
        """Why the claim matched no row: raise the refusal, replay a known key, or None to retry."""
        refusal: StateroomError | None = None
        with transaction.atomic():
            session = self._lock(session_id)
            previous = self._previous_append(session_id, idempotency_key)
            if previous is not None:
                return _replay(previous, digest)
            if session.content_deleted_at is not None:
                raise Conflict(
                    "The session's content was deleted; it takes no new items.",
                    code="content_deleted",
                    details={"status": session.status},
                )
            self._refuse_terminal(session)
            if session.status == SessionStatus.CREATING:
                raise Conflict(
                    "The session is not active yet.",
                    code="invalid_transition",
                    details={"status": session.status},
                )
            refusal = self._expire_if_lease_passed(session, self.now(), code="session_terminal")
            if refusal is None and run_id and not self._run_writes_to(session, run_id):
                raise Conflict(
                    "This run is not attached to the session.",
                    code="run_not_attached",
                    details={"run_id": run_id},
                )
        if refusal is not None:
            raise refusal
        return None

    def _run_writes_to(self, session: Session, run_id: str) -> bool:
        return (
            self._open_attachments_query().filter(session=session, run_id=run_id).exists()
            or Run.objects.filter(tenant=self.tenant, run_id=run_id, session=session).exists()
        )


def _not_found(session_id: str) -> NotFound:
    return NotFound("No such session.", details={"session_id": session_id})


def _is_short_text(value: Any, max_length: int) -> bool:
    return isinstance(value, str) and 1 <= len(value) <= max_length and not _text_problem(value)


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "must not contain NUL characters"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no lone surrogates)"
    return None


def _json_problem(value: Any) -> str | None:
    """Why the database would refuse this JSON value (PostgreSQL jsonb takes no NaN, NUL
    or lone surrogates; Python's json module lets all three through), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return "must not contain NaN or Infinity"
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, dict):
        for key, child in value.items():
            if problem := _text_problem(str(key)) or _json_problem(child):
                return problem
    elif isinstance(value, list):
        for child in value:
            if problem := _json_problem(child):
                return problem
    return None


def _check_reason(reason: Any) -> None:
    if not isinstance(reason, str):
        raise Unprocessable("reason must be a string.", details={"reason": ["must be a string"]})
    if problem := _text_problem(reason):
        raise Unprocessable("reason is invalid.", details={"reason": [problem]})


def _lease_errors(lease_seconds: Any) -> dict[str, list[str]]:
    if (
        isinstance(lease_seconds, bool)
        or not isinstance(lease_seconds, int)
        or not 1 <= lease_seconds <= MAX_LEASE_SECONDS
    ):
        return {"lease_seconds": [f"must be an integer from 1 to {MAX_LEASE_SECONDS}"]}
    return {}


def _run_id_errors(run_id: Any) -> dict[str, list[str]]:
    if not isinstance(run_id, str) or not is_valid_public_id(run_id):
        return {"run_id": ["must be 1-128 characters of A-Z a-z 0-9 . _ : -"]}
    return {}


def _revision_errors(expected_revision: Any) -> dict[str, list[str]]:
    if (
        isinstance(expected_revision, bool)
        or not isinstance(expected_revision, int)
        or expected_revision < 0
    ):
        return {"expected_revision": ["must be a non-negative integer"]}
    return {}


def _validated_items(items: Any) -> list[dict[str, Any]]:
    """The items as model fields, or 422 naming each bad field (`items[3].role`)."""
    if not isinstance(items, list) or not items:
        raise Unprocessable(
            "items must be a non-empty list.", details={"items": ["must be a non-empty list"]}
        )
    if len(items) > MAX_ITEMS_PER_APPEND:
        raise Unprocessable(
            "Too many items.", details={"items": [f"at most {MAX_ITEMS_PER_APPEND} per call"]}
        )
    errors: dict[str, list[str]] = {}
    rows = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            errors[f"items[{index}]"] = ["must be an object"]
            continue
        for name, max_length in (("role", MAX_ROLE_LENGTH), ("item_type", MAX_ITEM_TYPE_LENGTH)):
            if not _is_short_text(item.get(name), max_length):
                errors[f"items[{index}].{name}"] = [
                    f"must be a non-empty string of at most {max_length} characters"
                ]
        if not isinstance(item.get("payload"), dict):
            errors[f"items[{index}].payload"] = ["must be an object"]
        elif problem := _json_problem(item["payload"]):
            errors[f"items[{index}].payload"] = [problem]
        rows.append(
            {
                "role": item.get("role"),
                "item_type": item.get("item_type"),
                "payload": item.get("payload"),
            }
        )
    if errors:
        raise Unprocessable("Some items are invalid.", details=errors)
    return rows


def _request_digest(rows: list[dict[str, Any]], run_id: str) -> str:
    canonical = json.dumps(
        {"items": rows, "run_id": run_id}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _replay(previous: ItemAppend, digest: str) -> AppendResult:
    if previous.request_digest != digest:
        raise Unprocessable(
            "This idempotency key was used with a different request.",
            code="idempotency_key_reused",
            details={"idempotency_key": ["was used with different items or run_id"]},
        )
    return AppendResult(previous.first_seq, previous.last_seq, created=False)


__all__ = [
    "LIVE_STATUSES",
    "SESSION_TRANSITIONS",
    "TERMINAL_SESSION_STATUSES",
    "AppendResult",
    "SessionRefusal",
    "SessionStore",
    "StoredItem",
]
