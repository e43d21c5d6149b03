"""SessionStore's hot path: appending conversation items, numbered gap-free per session."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from stateroom import ports
from stateroom.canonical import canonical_bytes
from stateroom.errors import Conflict, NotFound, StateroomError, Unprocessable
from stateroom.ids import MAX_WORKER_LENGTH, PUBLIC_ID_RULE, is_valid_public_id
from stateroom.jsondata import canonical_data
from stateroom.sql import hot_cursor

from ..models import ItemAppend, Session, SessionAttachment, SessionItem, SessionStatus
from .base import LIVE_STATUSES, SessionStoreBase
from .validation import MAX_IDEMPOTENCY_KEY_LENGTH, is_short_text, validated_items

_SESSIONS = Session._meta.db_table
_ITEMS = SessionItem._meta.db_table
_APPENDS = ItemAppend._meta.db_table
_ATTACHMENTS = SessionAttachment._meta.db_table


@dataclass(frozen=True)
class AppendResult:
    first_seq: int
    last_seq: int
    created: bool


def _encoded(items: list[dict], rows: list[dict[str, Any]]) -> bytes:
    """The rows' canonical JSON, their payloads checked once, in that text.

    What PostgreSQL's jsonb refuses (NaN, NUL, a lone surrogate) either cannot be
    encoded or shows in the text as `\\u0000`; only then are the payloads walked, to
    name the item (422 `items[3].payload`). A payload that spells a backslash and
    `u0000` shows the same text and passes the walk.
    """
    try:
        body = canonical_data(rows, "items")
    except Exception:
        validated_items(items)  # a payload the database would refuse is named first
        raise
    if b"\\u0000" in body:
        validated_items(items)
    return body


class SessionAppends(SessionStoreBase):
    def append_items(
        self,
        *,
        session_id: str,
        items: list[dict],
        run_id: str = "",
        idempotency_key: str | None = None,
        worker: str | None = None,
    ) -> AppendResult:
        """Append conversation items with gap-free, commit-ordered `seq`s.

        Hot path: one statement (`_append_in_one_statement`) locks the
        session, records the idempotency key, claims the seqs and inserts the
        items; outside a transaction it is one round trip. When it writes
        nothing, `_refuse_append` says why, or replays a known key.

        Items written for a run (`run_id`) are the run's writes: while another
        worker's claim on it is live (`runs_app` claims), they need that
        `worker`, or they are 409 `run_claimed` and nothing is written.
        """
        rows = validated_items(items, payloads=False)
        errors: dict[str, list[str]] = {}
        if run_id and not is_valid_public_id(run_id):
            errors["run_id"] = [PUBLIC_ID_RULE]
        if idempotency_key is not None and not is_short_text(
            idempotency_key, MAX_IDEMPOTENCY_KEY_LENGTH
        ):
            errors["idempotency_key"] = [
                f"must be a non-empty string of at most {MAX_IDEMPOTENCY_KEY_LENGTH} characters"
            ]
        if worker is not None and not is_short_text(worker, MAX_WORKER_LENGTH):
            errors["worker"] = [
                f"must be a non-empty string of at most {MAX_WORKER_LENGTH} characters"
            ]
        if errors:
            raise Unprocessable("Some fields are invalid.", details=errors)
        body = _encoded(items, rows)  # the items' one parameter, and the digest's text
        digest = _request_digest(body, run_id) if idempotency_key is not None else ""
        for _attempt in range(3):
            now = self.now()
            appended = self._append_in_one_statement(
                session_id, (len(rows), body), run_id, idempotency_key, digest, now, worker
            )
            if appended is not None:
                return appended
            replayed = self._refuse_append(session_id, run_id, idempotency_key, digest, worker)
            if replayed is not None:
                return replayed
        raise Conflict("The session changed while appending; retry.", code="append_contention")

    def _claim_sql(
        self, session_id: str, count: int, run_id: str, now: datetime, worker: str | None = None
    ) -> tuple[str, list[Any]]:
        """The SELECT … FOR UPDATE that locks a writable session and reads its last seq.

        Raw SQL so the claim, the key and the items are one statement; RLS
        still applies, and the tenant is filtered explicitly as everywhere else.
        """
        sql = (
            f"SELECT id, last_seq FROM {_SESSIONS}"
            f" WHERE tenant_id = %s AND session_id = %s AND status IN (%s, %s)"
            f" AND lease_until >= %s AND content_fenced_at IS NULL"
        )
        params: list[Any] = [
            self.tenant.pk,
            session_id,
            *(s.value for s in LIVE_STATUSES),
            now,
        ]
        if run_id:
            # The writing run must be attached to this session, or be one of its runs.
            runs = ports.session_runs()
            sql += (
                f" AND (EXISTS (SELECT 1 FROM {_ATTACHMENTS} a WHERE a.tenant_id = %s"
                f" AND a.session_id = {_SESSIONS}.id AND a.run_id = %s AND a.detached_at IS NULL)"
                f" OR EXISTS (SELECT 1 FROM {runs.table} r WHERE r.tenant_id = %s AND r.run_id = %s"
                f" AND r.session_id = {_SESSIONS}.id))"
            )
            params += [self.tenant.pk, run_id, self.tenant.pk, run_id]
            # ...and no other worker's claim on the run may be live (runs_app.claims).
            free, free_params = runs.claim_free_sql(worker, now, "w")
            sql += (
                f" AND NOT EXISTS (SELECT 1 FROM {runs.table} w WHERE w.tenant_id = %s"
                f" AND w.run_id = %s AND NOT {free})"
            )
            params += [self.tenant.pk, run_id, *free_params]
        return sql + " FOR UPDATE", params

    def _append_in_one_statement(
        self,
        session_id: str,
        items: tuple[int, bytes],
        run_id: str,
        idempotency_key: str | None,
        digest: str,
        now: datetime,
        worker: str | None = None,
    ) -> AppendResult | None:
        """Lock the session, record the key, claim the seqs and insert the items: one statement.

        `c` locks a writable session's row (`_claim_sql`) and reads its
        `last_seq` (under READ COMMITTED, the newest committed one: the lock
        waits for a concurrent appender and re-reads the row). `k` records the
        idempotency key with the seqs it claims (`ON CONFLICT DO NOTHING`: a
        key already taken, even by a request that committed while this one
        waited, inserts nothing). Only a recorded key moves the session's
        `last_seq` (`s`, which also renews the lease, an append being activity,
        and flags the session for the search indexer: a HOT update, migration 0012)
        and inserts the items (`i`). So the statement is complete on its own:
        it commits alone (one round trip outside a transaction) and a refused
        key leaves no gap. None when nothing was written; the caller finds out
        why, or replays the key.

        The row lock serializes appenders of the session until commit, so seqs
        are handed out in commit order and a rolled-back append returns them.
        """
        count, body = items
        claim, params = self._claim_sql(session_id, count, run_id, now, worker)
        recorded, recorded_params = self._record_key_sql(idempotency_key, digest, count, now)
        params += recorded_params
        params += self._write_params(count, body, run_id, now)
        with hot_cursor(alone=True) as cursor:
            cursor.execute(_append_statement(claim, recorded), params)
            last_seq, writable = cursor.fetchone()
        if last_seq is not None:
            return AppendResult(last_seq - count + 1, last_seq, created=True)
        if not writable:
            return None
        with self.reading():
            previous = self._previous_append(session_id, idempotency_key)
        if previous is None:  # pragma: no cover - the key's row was just seen
            raise Conflict("The session changed while appending; retry.", code="append_contention")
        return _replay(previous, digest)

    def _record_key_sql(
        self, idempotency_key: str | None, digest: str, count: int, now: datetime
    ) -> tuple[str, list[Any]]:
        """`k`: the idempotency key recorded with the seqs it claims (no key: the seqs alone)."""
        if idempotency_key is None:
            return "SELECT c.id, c.last_seq + %s AS last_seq FROM c", [count]
        sql = (
            f"INSERT INTO {_APPENDS} (tenant_id, session_id, idempotency_key, request_digest,"
            " first_seq, last_seq, created_at)"
            " SELECT %s, c.id, %s, %s, c.last_seq + 1, c.last_seq + %s, %s FROM c"
            " ON CONFLICT (tenant_id, session_id, idempotency_key) DO NOTHING"
            " RETURNING session_id AS id, last_seq"
        )
        return sql, [self.tenant.pk, idempotency_key, digest, count, now]

    def _write_params(self, count: int, body: bytes, run_id: str, now: datetime) -> list[Any]:
        """The parameters of `s` (the session's seq and lease) and `i` (the items), in order:
        the items as one JSON array (their canonical text)."""
        return [
            count,
            now,
            SessionStatus.ACTIVE.value,
            now,
            self.tenant.pk,
            self.tenant.pk,
            count,
            run_id,
            now,
            body.decode(),
        ]

    def _previous_append(self, session_id: str, idempotency_key: str | None) -> ItemAppend | None:
        if idempotency_key is None:
            return None
        return ItemAppend.objects.filter(
            tenant=self.tenant,
            session__in=Session.objects.filter(tenant=self.tenant, session_id=session_id),
            idempotency_key=idempotency_key,
        ).first()

    def _refuse_append(
        self,
        session_id: str,
        run_id: str,
        idempotency_key: str | None,
        digest: str,
        worker: str | None = None,
    ) -> AppendResult | None:
        """Why the claim matched no row: raise the refusal, replay a known key, or None to retry."""
        refusal: StateroomError | None = None
        with self.atomic():
            session = self._lock(session_id)
            previous = self._previous_append(session_id, idempotency_key)
            if previous is not None:
                return _replay(previous, digest)
            # Every id in a body names an object of this tenant, as a path id does.
            if run_id and not ports.session_runs().exists(self.tenant, run_id):
                raise NotFound("No such run.", details={"run_id": run_id})
            if session.content_fenced_at is not None:
                raise Conflict(
                    "The session's content is deleted; it takes no new items.",
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
            if refusal is None and run_id:
                self._refuse_claimed(run_id, worker)
        if refusal is not None:
            raise refusal
        return None

    def _refuse_claimed(self, run_id: str, worker: str | None) -> None:
        """409 `run_claimed` when another worker's claim on the run is live."""
        refusal = ports.session_runs().refuse_claimed(self.tenant, run_id, worker, self.now())
        if refusal is not None:
            raise refusal

    def _run_writes_to(self, session: Session, run_id: str) -> bool:
        return self._open_attachments_query().filter(
            session=session, run_id=run_id
        ).exists() or ports.session_runs().of_session(self.tenant, run_id, session)


def _append_statement(claim: str, recorded: str) -> str:
    """The append: `c` (claim), `k` (key), `s` (session), `i` (items); (last_seq, writable)."""
    return (
        f"WITH c AS ({claim}), k AS ({recorded}),"
        f" s AS (UPDATE {_SESSIONS} SET last_seq = {_SESSIONS}.last_seq + %s, last_active_at = %s,"
        " status = %s, lease_until = %s + lease_seconds * interval '1 second',"
        " search_pending = true"
        f" FROM k WHERE {_SESSIONS}.id = k.id AND {_SESSIONS}.tenant_id = %s"
        " RETURNING k.last_seq),"
        f" i AS (INSERT INTO {_ITEMS} (tenant_id, session_id, seq, role, item_type, payload,"
        " run_id, created_at)"
        " SELECT %s, k.id, k.last_seq - %s + u.ord, u.e->>'role', u.e->>'item_type',"
        " u.e->'payload', %s, %s FROM k, jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS u(e, ord))"
        " SELECT (SELECT last_seq FROM s), EXISTS (SELECT 1 FROM c)"
    )


def _request_digest(body: bytes, run_id: str) -> str:
    """The digest of `{"items": …, "run_id": …}` (RFC 8785, keys in order), from the items'
    canonical text the statement sends: the same bytes, encoded once."""
    return hashlib.sha256(
        b'{"items":' + body + b',"run_id":' + canonical_bytes(run_id) + b"}"
    ).hexdigest()


def _replay(previous: ItemAppend, digest: str) -> AppendResult:
    if previous.request_digest != digest:
        raise Unprocessable(
            "This idempotency key was used with a different request.",
            code="idempotency_key_reused",
            details={"idempotency_key": ["was used with different items or run_id"]},
        )
    return AppendResult(previous.first_seq, previous.last_seq, created=False)
