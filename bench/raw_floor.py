"""The floor: the same operations as hand-written psycopg 3 SQL.

What a psycopg expert would write without Stateroom's stores, keeping the
same guarantees so the comparison is fair, on tables of its own
(`floor_tables`: the same columns and rows, only the indexes the guarantees
need, no triggers, no foreign keys, no search), under the same app role and
forced RLS. Everything Stateroom's schema adds counts against Stateroom.

- items go as one JSON array parameter (`jsonb_array_elements … WITH
  ORDINALITY`), and the request digest is taken of the same canonical text;

- every transaction sets `app.tenant_id` first (forced RLS applies), and
  filters on `tenant_id` explicitly too;
- appends claim seqs with one conditional `UPDATE ... RETURNING` on the
  session row (gap-free, commit-ordered), only on a live session whose lease
  has not passed; an idempotency key is recorded in the same transaction and
  a repeated key returns the original seqs (a different request is refused);
- compare-and-set is one conditional UPDATE on the version (a run neither
  finished, fenced for deletion nor claimed by a live worker) plus the
  transition row; checkpoints take the next seq under the task's row lock
  and refuse a finished task;
- each operation reads what the API answers with, as the store returns it:
  a compare-and-set (and the contention test's read) the whole run row with
  its session's and task's public ids, the pending list and the latest
  checkpoint every column their API objects show (the store's result is no
  more than that);
- each write is one statement, as in Stateroom's stores: the claiming
  UPDATE and the INSERTs that use its RETURNING row are data-modifying CTEs,
  so the floor sends no more round trips than the store does;
- effects are recorded under a unique key; a repeat returns the existing
  record, a different request under the same key is refused.

It uses psycopg's defaults (server-side binding, statements prepared after
five runs), i.e. the fastest plain psycopg there is.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from . import floor_tables
from .database import TENANT_SETTING

TERMINAL_RUN = ("succeeded", "failed", "cancelled")
TERMINAL_TASK = ("completed", "failed", "cancelled")


class RefusedError(Exception):
    """The raw floor's 404/409/422 (never expected while measuring)."""


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class RawFloor:
    """`one_statement=False`: the four-statement shape (BEGIN, set_config, the statement,
    COMMIT). `one_statement=True`: the physical floor, one autocommit statement per
    operation; the tenant is set once for the connection (`set_config(…, false)`), so
    the same forced RLS policy is evaluated but costs no round trip."""

    def __init__(
        self, conn: psycopg.Connection, tenant_pk: int, *, one_statement: bool = False
    ) -> None:
        self.conn = conn
        self.tenant = tenant_pk
        self.t = floor_tables.names()
        self.one_statement = one_statement
        if one_statement:
            conn.execute("SELECT set_config(%s, %s, false)", [TENANT_SETTING, str(tenant_pk)])
        # Round trips, BEGIN and COMMIT included, as Django's CaptureQueriesContext counts them.
        self.statements = 0

    def _x(self, cur: psycopg.Cursor, sql: str, params: Any = None) -> psycopg.Cursor:
        self.statements += 1
        return cur.execute(sql, params)

    def _tx(self):
        return _OneStatement(self) if self.one_statement else _TenantTx(self)

    # --- sessions -----------------------------------------------------------
    def append_items(self, *, session_id: str, items: list[dict], idempotency_key: str) -> tuple:
        t = self.t
        body = canonical(items)  # one JSON array: the items, and the digest's text
        digest = sha256('{"items":' + body + ',"run_id":""}')
        now = datetime.now(UTC)
        with self._tx() as cur:
            row = self._x(
                cur,
                f"WITH s AS (UPDATE {t['session']} SET last_seq = last_seq + %s, last_active_at = %s,"
                " status = 'active', lease_until = %s + lease_seconds * interval '1 second'"
                " WHERE tenant_id = %s AND session_id = %s"
                " AND status IN ('active', 'idle') AND lease_until >= %s"
                " AND content_fenced_at IS NULL"
                f" AND NOT EXISTS (SELECT 1 FROM {t['item_append']} k WHERE k.tenant_id = %s"
                f" AND k.session_id = {t['session']}.id AND k.idempotency_key = %s)"
                " RETURNING id, last_seq),"
                f" k AS (INSERT INTO {t['item_append']} (tenant_id, session_id, idempotency_key,"
                " request_digest, first_seq, last_seq, created_at)"
                " SELECT %s, s.id, %s, %s, s.last_seq - %s + 1, s.last_seq, %s FROM s"
                " ON CONFLICT (tenant_id, session_id, idempotency_key) DO NOTHING RETURNING id),"
                f" i AS (INSERT INTO {t['item']} (tenant_id, session_id, seq, role, item_type,"
                " payload, run_id, created_at) SELECT %s, s.id, s.last_seq - %s + u.ord,"
                " u.e->>'role', u.e->>'item_type', u.e->'payload', '', %s"
                " FROM s, jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS u(e, ord)"
                " WHERE EXISTS (SELECT 1 FROM k))"
                " SELECT s.id, s.last_seq, EXISTS (SELECT 1 FROM k) FROM s",
                [
                    len(items),
                    now,
                    now,
                    self.tenant,
                    session_id,
                    now,
                    self.tenant,
                    idempotency_key,
                    self.tenant,
                    idempotency_key,
                    digest,
                    len(items),
                    now,
                    self.tenant,
                    len(items),
                    now,
                    body,
                ],
            ).fetchone()
            if row is None:
                raise _Replay(session_id)  # a known key, or a session not writable
            _, last_seq, recorded = row
            if not recorded:  # a racing request took the key: undo everything
                raise _Replay(session_id)
            return last_seq - len(items) + 1, last_seq, True

    def append_items_or_replay(self, **kw) -> tuple:
        try:
            return self.append_items(**kw)
        except _Replay as replay:
            with self._tx() as cur:
                row = self._x(
                    cur,
                    f"SELECT k.first_seq, k.last_seq, k.request_digest FROM {self.t['item_append']} k"
                    f" JOIN {self.t['session']} s ON s.id = k.session_id WHERE k.tenant_id = %s"
                    " AND s.tenant_id = %s AND s.session_id = %s AND k.idempotency_key = %s",
                    [self.tenant, self.tenant, replay.session_id, kw["idempotency_key"]],
                ).fetchone()
            if row is None:
                raise RefusedError("session not writable") from None
            if row[2] != sha256('{"items":' + canonical(kw["items"]) + ',"run_id":""}'):
                raise RefusedError("idempotency_key_reused") from None
            return row[0], row[1], False

    def last_items(self, *, session_id: str, limit: int = 50) -> list[tuple]:
        with self._tx() as cur:
            rows = self._x(
                cur,
                f"SELECT s.id, i.seq, i.role, i.item_type, i.payload, i.run_id, i.created_at"
                f" FROM {self.t['session']} s LEFT JOIN LATERAL ("
                f"  SELECT seq, role, item_type, payload, run_id, created_at FROM {self.t['item']}"
                "   WHERE tenant_id = s.tenant_id AND session_id = s.id ORDER BY seq DESC LIMIT %s"
                ") i ON true WHERE s.tenant_id = %s AND s.session_id = %s",
                [limit, self.tenant, session_id],
            ).fetchall()
        if not rows:
            raise RefusedError("no such session")
        rows.reverse()
        return [r[1:] for r in rows if r[1] is not None]

    # --- runs -----------------------------------------------------------------
    def compare_and_set(self, *, run_id: str, expected_version: int, changes: dict) -> int:
        t = self.t
        now = datetime.now(UTC)
        with self._tx() as cur:
            row = self._x(
                cur,
                f"WITH r AS (UPDATE {t['run']} SET turn_index = %s, token_used = %s,"
                " current_node_id = %s, updated_at = %s, previous_status = status,"
                " version = version + 1 WHERE tenant_id = %s AND run_id = %s AND version = %s"
                " AND status NOT IN ('succeeded', 'failed', 'cancelled')"
                " AND content_fenced_at IS NULL"
                " AND (claimed_by = '' OR claim_until IS NULL OR claim_until <= %s)"
                " RETURNING *),"
                f" t AS (INSERT INTO {t['run_transition']} (tenant_id, run_id, version,"
                " from_status, to_status, changes, actor_label, created_at)"
                " SELECT %s, r.id, r.version, r.previous_status, r.status, %s, %s, %s FROM r)"
                # The whole run, with its session's and task's public ids: what the API answers.
                f" SELECT r.version, r.*, (SELECT session_id FROM {t['session']}"
                f" WHERE id = r.session_id), (SELECT task_id FROM {t['task']}"
                " WHERE id = r.task_id) FROM r",
                [
                    changes["turn_index"],
                    changes["token_used"],
                    changes["current_node_id"],
                    now,
                    self.tenant,
                    run_id,
                    expected_version,
                    now,
                    self.tenant,
                    Jsonb(changes),
                    "token:bench",
                    now,
                ],
            ).fetchone()
        if row is None:
            raise RefusedError("version_conflict")
        return row[0]

    # --- tasks ----------------------------------------------------------------
    def append_checkpoint(self, *, task_id: str, schema_version: int, state: dict) -> tuple:
        t = self.t
        body = canonical(state)
        checkpoint_id = f"ckpt_{uuid.uuid4().hex[:20]}"
        now = datetime.now(UTC)
        with self._tx() as cur:
            row = self._x(
                cur,
                f"WITH k AS (UPDATE {t['task']} SET last_checkpoint_seq = last_checkpoint_seq + 1,"
                " latest_checkpoint_id = %s, schema_version = %s, updated_at = %s"
                " WHERE tenant_id = %s AND task_id = %s"
                " AND status NOT IN ('completed', 'failed', 'cancelled')"
                " RETURNING id, last_checkpoint_seq),"
                f" c AS (INSERT INTO {t['checkpoint']} (tenant_id, task_id, checkpoint_id, seq,"
                " schema_version, node_id, state, size_bytes, created_at)"
                " SELECT %s, k.id, %s, k.last_checkpoint_seq, %s, '', %s, %s, %s FROM k)"
                " SELECT last_checkpoint_seq FROM k",
                [
                    checkpoint_id,
                    schema_version,
                    now,
                    self.tenant,
                    task_id,
                    self.tenant,
                    checkpoint_id,
                    schema_version,
                    Jsonb(body, dumps=_already_json),
                    len(body.encode()),
                    now,
                ],
            ).fetchone()
        if row is None:
            raise RefusedError("no such task or finished")
        return checkpoint_id, row[0]

    def latest_checkpoint(self, *, task_id: str) -> tuple:
        t = self.t
        with self._tx() as cur:
            row = self._x(
                cur,
                f"SELECT c.checkpoint_id, c.seq, c.schema_version, c.node_id, c.state,"
                f" c.size_bytes, c.created_at, c.body_deleted_at FROM {t['task']} k JOIN {t['checkpoint']} c ON c.tenant_id = k.tenant_id"
                " AND c.task_id = k.id AND c.seq = k.last_checkpoint_seq"
                " WHERE k.tenant_id = %s AND k.task_id = %s",
                [self.tenant, task_id],
            ).fetchone()
        if row is None:
            raise RefusedError("no checkpoint")
        return row

    def checkpoint_history(self, *, task_id: str, limit: int = 20) -> list[tuple]:
        t = self.t
        with self._tx() as cur:
            rows = self._x(
                cur,
                f"SELECT c.checkpoint_id, c.seq, c.schema_version, c.node_id, c.state,"
                f" c.size_bytes, c.created_at FROM {t['task']} k LEFT JOIN LATERAL ("
                f" SELECT * FROM {t['checkpoint']} WHERE tenant_id = k.tenant_id"
                " AND task_id = k.id ORDER BY seq DESC LIMIT %s) c ON true"
                " WHERE k.tenant_id = %s AND k.task_id = %s",
                [limit, self.tenant, task_id],
            ).fetchall()
        if not rows:
            raise RefusedError("no such task")
        return rows

    def pending_approvals(self, *, limit: int = 50) -> list[tuple]:
        """The newest `limit` pending approvals not past their expiry, with their run ids."""
        t = self.t
        with self._tx() as cur:
            return self._x(
                cur,
                # Every column the API's list shows (what the store's page holds).
                f"SELECT a.id, a.approval_id, r.run_id, a.tool_name, a.arguments, a.risk,"
                " a.reason, a.summary, a.key_arguments, a.usual_arguments, a.allowed_decisions,"
                " a.call_digest, a.run_version, a.first_approved_by, a.first_approval_reason,"
                f" a.expires_at, a.created_at, (SELECT p.approval_id FROM {t['approval']} p"
                f" WHERE p.id = a.replaces_id) FROM (SELECT * FROM {t['approval']}"
                " WHERE tenant_id = %s AND status = 'pending'"
                " AND (expires_at IS NULL OR expires_at > now()) ORDER BY id DESC LIMIT %s) a"
                f" JOIN {t['run']} r ON r.id = a.run_id ORDER BY a.id DESC",
                [self.tenant, limit + 1],
            ).fetchall()

    def read_run(self, *, run_id: str) -> tuple:
        with self._tx() as cur:
            row = self._x(
                cur,
                # The whole run with its session's and task's public ids, as GET /runs/{id}.
                f"SELECT r.id, r.version, r.status, r.*, s.session_id, k.task_id"
                f" FROM {self.t['run']} r LEFT JOIN {self.t['session']} s ON s.id = r.session_id"
                f" LEFT JOIN {self.t['task']} k ON k.id = r.task_id"
                " WHERE r.tenant_id = %s AND r.run_id = %s",
                [self.tenant, run_id],
            ).fetchone()
        if row is None:
            raise RefusedError("no such run")
        return row[:3]

    def try_compare_and_set(self, *, run_id: str, expected_version: int, changes: dict) -> bool:
        try:
            self.compare_and_set(run_id=run_id, expected_version=expected_version, changes=changes)
        except RefusedError:
            return False
        return True

    # --- effects --------------------------------------------------------------
    def record_effect(
        self, *, run_id: str, idempotency_key: str, tool_name: str, request: dict
    ) -> tuple[str, bool]:
        t = self.t
        wanted = sha256(canonical({"tool_name": tool_name, "request": request}))
        now = datetime.now(UTC)
        with self._tx() as cur:
            row = self._x(
                cur,
                f"INSERT INTO {t['effect']} (tenant_id, effect_id, run_id, node_id, idempotency_key,"
                " tool_name, request, request_digest, status, settled_by, settle_reason,"
                " created_at, updated_at)"
                f" SELECT %s, %s, r.id, '', %s, %s, %s, %s, 'started', '', '', %s, %s FROM {t['run']} r"
                " WHERE r.tenant_id = %s AND r.run_id = %s"
                " ON CONFLICT (tenant_id, idempotency_key) DO NOTHING RETURNING effect_id",
                [
                    self.tenant,
                    f"eff_{uuid.uuid4().hex[:20]}",
                    idempotency_key,
                    tool_name,
                    Jsonb(request),
                    wanted,
                    now,
                    now,
                    self.tenant,
                    run_id,
                ],
            ).fetchone()
            if row is not None:
                return row[0], True
            existing = self._x(
                cur,
                f"SELECT effect_id, request_digest, status FROM {t['effect']}"
                " WHERE tenant_id = %s AND idempotency_key = %s",
                [self.tenant, idempotency_key],
            ).fetchone()
        if existing is None:
            raise RefusedError("no such run")
        if existing[1] != wanted:
            raise RefusedError("idempotency_key_reused")
        return existing[0], False


class PlainFloor(RawFloor):
    """The plain-statement floor: one plain INSERT, UPDATE or SELECT per operation, on the
    floor's tables, without the guarantees (no session lock, lease or idempotency key,
    no version check or transition row, checkpoint seqs from a counter of its own).

    The second column of the store table: what the guarantees cost the floor."""

    def __init__(self, conn: psycopg.Connection, tenant_pk: int) -> None:
        super().__init__(conn, tenant_pk, one_statement=True)
        # Negative seqs, new on every run: below every seq the guarded floor hands out (so
        # the reads of the newest items and checkpoints never meet them), never repeated.
        self._seq = itertools.count(-(time.time_ns() // 1000) * 1000, -1)

    def append_items_or_replay(self, *, session_id: str, items: list[dict], **_ignored) -> tuple:
        first = next(self._seq)
        for _ in items[1:]:
            next(self._seq)
        first -= len(items) - 1  # the items' seqs ascend from `first`
        with self._tx() as cur:
            self._x(
                cur,
                f"INSERT INTO {self.t['item']} (tenant_id, session_id, seq, role, item_type,"
                " payload, run_id, created_at) SELECT %s, s.id, %s + u.ord - 1, u.e->>'role',"
                " u.e->>'item_type', u.e->'payload', '', %s"
                f" FROM {self.t['session']} s, jsonb_array_elements(%s::jsonb)"
                " WITH ORDINALITY AS u(e, ord) WHERE s.tenant_id = %s AND s.session_id = %s",
                [self.tenant, first, datetime.now(UTC), canonical(items), self.tenant, session_id],
            )
        return first, first + len(items) - 1, True

    def compare_and_set(self, *, run_id: str, expected_version: int, changes: dict) -> int:
        with self._tx() as cur:
            row = self._x(
                cur,
                f"UPDATE {self.t['run']} SET turn_index = %s, token_used = %s,"
                " current_node_id = %s, updated_at = %s, version = version + 1"
                " WHERE tenant_id = %s AND run_id = %s RETURNING version",
                [
                    changes["turn_index"],
                    changes["token_used"],
                    changes["current_node_id"],
                    datetime.now(UTC),
                    self.tenant,
                    run_id,
                ],
            ).fetchone()
        return row[0]

    def append_checkpoint(self, *, task_id: str, schema_version: int, state: dict) -> tuple:
        body = canonical(state)
        checkpoint_id = f"ckpt_{uuid.uuid4().hex[:20]}"
        seq = next(self._seq)
        with self._tx() as cur:
            self._x(
                cur,
                f"INSERT INTO {self.t['checkpoint']} (tenant_id, task_id, checkpoint_id, seq,"
                " schema_version, node_id, state, size_bytes, created_at)"
                f" SELECT %s, k.id, %s, %s, %s, '', %s, %s, %s FROM {self.t['task']} k"
                " WHERE k.tenant_id = %s AND k.task_id = %s",
                [
                    self.tenant,
                    checkpoint_id,
                    seq,
                    schema_version,
                    Jsonb(body, dumps=_already_json),
                    len(body.encode()),
                    datetime.now(UTC),
                    self.tenant,
                    task_id,
                ],
            )
        return checkpoint_id, seq

    def record_effect(
        self, *, run_id: str, idempotency_key: str, tool_name: str, request: dict
    ) -> tuple[str, bool]:
        effect_id = f"eff_{uuid.uuid4().hex[:20]}"
        now = datetime.now(UTC)
        with self._tx() as cur:
            self._x(
                cur,
                f"INSERT INTO {self.t['effect']} (tenant_id, effect_id, run_id, node_id,"
                " idempotency_key, tool_name, request, request_digest, status, settled_by,"
                " settle_reason, created_at, updated_at)"
                f" SELECT %s, %s, r.id, '', %s, %s, %s, '', 'started', '', '', %s, %s"
                f" FROM {self.t['run']} r WHERE r.tenant_id = %s AND r.run_id = %s",
                [
                    self.tenant,
                    effect_id,
                    f"plain-{uuid.uuid4().hex}",
                    tool_name,
                    Jsonb(request),
                    now,
                    now,
                    self.tenant,
                    run_id,
                ],
            )
        return effect_id, True


def _already_json(value: str) -> str:
    return value


class _Replay(Exception):
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


class _OneStatement:
    def __init__(self, floor: RawFloor) -> None:
        self.floor = floor

    def __enter__(self) -> psycopg.Cursor:
        self._cur = self.floor.conn.cursor()
        return self._cur

    def __exit__(self, *exc) -> None:
        self._cur.close()


class _TenantTx:
    def __init__(self, floor: RawFloor) -> None:
        self.floor = floor

    def __enter__(self) -> psycopg.Cursor:
        self.floor.statements += 2  # BEGIN, COMMIT (or ROLLBACK)
        self._tx = self.floor.conn.transaction()
        self._tx.__enter__()
        self._cur = self.floor.conn.cursor()
        self.floor._x(
            self._cur, "SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(self.floor.tenant)]
        )
        return self._cur

    def __exit__(self, *exc) -> bool | None:
        self._cur.close()
        return self._tx.__exit__(*exc)
