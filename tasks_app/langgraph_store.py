"""GraphThreadStore: what LangGraph's checkpointer keeps, on a durable task.

A LangGraph thread is a task whose `task_id` is the thread id
(docs/architecture.md, "LangGraph threads"). Its checkpoints, their channel
values and the pending writes of its tasks live in `GraphCheckpoint`,
`GraphBlob` and `GraphWrite`:

- a checkpoint row holds LangGraph's checkpoint without its channel values,
  its namespace, parent, metadata and channel versions;
- a channel value is a blob stored once per (thread, namespace, channel,
  version): a checkpoint names the versions it sees, so a value that did not
  change is not stored again;
- a pending write is its own row, keyed by (checkpoint, LangGraph task id,
  index): a repeated write is a no-op, except that the special channels
  (negative indexes: error, interrupt, resume, scheduled) are replaced.

`put`, `put_writes` and a page of checkpoints are the hot path of every graph
step: each is one statement (`hot_cursor(alone=True)`), like the task store's
checkpoint append; from a request with no transaction (the saver's routes),
one message with the tenant setting. Runtime
writes are not audited (the rows are their own history); deletions are.
A task fenced by a content deletion of a session it served takes no more
puts, writes or copies, and is copied from by none (409 `content_deleted`);
its values, writes and checkpoint metadata are the task's content
(`TaskStateStore.CONTENT`), removed with the session's.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models import Exists, F, Func, OuterRef, Subquery

from stateroom.errors import Conflict, ContentDeleted, NotFound, Unprocessable
from stateroom.ids import is_valid_public_id
from stateroom.jsondata import storable_json
from stateroom.sql import hot_cursor, insert_from, model_from_row
from stateroom.store import BaseStore

from .langgraph_sql import (
    BLOBS,
    CHECKPOINTS,
    FIND_TASK,
    NEW_TASK,
    PUT,
    PUT_WRITES,
    TASKS,
    TERMINAL,
    THREAD_OF,
    WRITES,
    list_sql,
)
from .models import TERMINAL_TASK_STATUSES, GraphBlob, GraphCheckpoint, GraphWrite, Task

NS_MAX = GraphCheckpoint._meta.get_field("checkpoint_ns").max_length
ID_MAX = GraphCheckpoint._meta.get_field("checkpoint_id").max_length
CHANNEL_MAX = GraphBlob._meta.get_field("channel").max_length
VERSION_MAX = GraphBlob._meta.get_field("version").max_length
TYPE_MAX = GraphBlob._meta.get_field("type").max_length
# A write's index is a PostgreSQL integer.
INT4_MIN, INT4_MAX = -(2**31), 2**31 - 1
TASK_PATH_MAX = GraphWrite._meta.get_field("graph_task_path").max_length
JSON_TYPE = "json"  # the value is plain JSON, stored as jsonb (the console can show it)
STRATEGIES = ("keep_latest", "delete")
INTERRUPT_CHANNEL = "__interrupt__"  # LangGraph's channel for a task's interrupts
CHECKPOINT_KEYS = frozenset({"v", "id", "ts", "channel_versions", "versions_seen"})
THREAD_ID_MAX = Task._meta.get_field("thread_id").max_length


def task_id_for(thread_id: str) -> str:
    """The task id of a LangGraph thread: the thread id when it is a public id, else derived.

    LangGraph takes any string as a thread id (an email, `slack:C1/1712.5`, a
    sentence); the task keeps such an id in `Task.thread_id` and goes by a
    digest of it, which is the same in every process (so two first puts of a
    new thread meet on the task's unique id).
    """
    if is_valid_public_id(thread_id):
        return thread_id
    return "lg_" + hashlib.sha256(thread_id.encode()).hexdigest()[:40]


def valid_thread_id(thread_id: Any, field: str = "thread_id") -> str:
    return _text(thread_id, field, max_length=THREAD_ID_MAX)


def _invalid(field: str, message: str) -> Unprocessable:
    return Unprocessable(f"{field}: {message}", details={field: [message]})


@dataclass(frozen=True)
class Value:
    """A serialized value: `type` json with `value`, or another type with `data` bytes."""

    type: str
    value: Any = None
    data: bytes | None = None

    def sql(self, path: str) -> tuple[str, str | None, bytes | None, int]:
        """(type, JSON text or None, bytes or None, size) for the tables' value columns."""
        if self.type == JSON_TYPE:
            text = storable_json(self.value, path)
            return self.type, text, None, len(text.encode())
        return self.type, None, self.data, len(self.data or b"")


@dataclass(frozen=True)
class Blob:
    channel: str
    version: str | int | float
    value: Value


@dataclass(frozen=True)
class Write:
    idx: int
    channel: str
    value: Value


@dataclass
class CheckpointTuple:
    """One checkpoint as `list_checkpoints` reads it, with its values and pending writes.

    With `raw=True` the four JSON fields are `orjson.Fragment`s of PostgreSQL's text,
    which the API writes as they are."""

    pk: int
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    created_at: Any
    channel_values: list[dict[str, Any]]
    pending_writes: list[dict[str, Any]]


def _text(value: Any, field: str, *, max_length: int, allow_blank: bool = False) -> str:
    if not isinstance(value, str) or (not value and not allow_blank) or len(value) > max_length:
        raise _invalid(
            field, f"must be a string of {0 if allow_blank else 1}-{max_length} characters"
        )
    if "\x00" in value:
        raise _invalid(field, "must not contain NUL")
    try:
        value.encode()
    except UnicodeEncodeError as exc:  # a lone surrogate: PostgreSQL text cannot hold it
        raise _invalid(field, "must be valid Unicode text") from exc
    return value


def _version_json(version: Any, field: str) -> str:
    """A channel version (string or number) as JSON, which SQL reads as jsonb text.

    The blob's key is `jsonb #>> '{}'` of it: exactly what
    `jsonb_each_text(checkpoint->'channel_versions')` gives back, so a
    checkpoint finds its values whatever numeric spelling the caller used.
    """
    if isinstance(version, bool) or not isinstance(version, str | int | float):
        raise _invalid(field, "must be a string or a number")
    text = storable_json(version, field)
    if len(text) > VERSION_MAX:
        raise _invalid(field, f"at most {VERSION_MAX} characters")
    return text


def _checkpoint_tuple(row: tuple[Any, ...], loads: Callable[[Any], Any]) -> CheckpointTuple:
    """A row of `list_sql`, its JSON fields read by `loads`."""
    return CheckpointTuple(
        pk=row[0],
        thread_id=row[9],
        checkpoint_ns=row[1],
        checkpoint_id=row[2],
        parent_checkpoint_id=row[3],
        checkpoint=loads(row[4]),
        metadata=loads(row[5]),
        created_at=row[6],
        channel_values=loads(row[7]) or [],
        pending_writes=loads(row[8]) or [],
    )


def _checked_checkpoint(checkpoint: Any, metadata: Any) -> tuple[str, str, str, str]:
    """A checkpoint and its metadata, checked: (checkpoint id, its JSON, the metadata's
    JSON, the run id the metadata names or "")."""
    if not isinstance(checkpoint, dict):
        raise _invalid("checkpoint", "must be a JSON object")
    missing = sorted(CHECKPOINT_KEYS - set(checkpoint))
    if missing:
        raise _invalid("checkpoint", "missing " + ", ".join(missing))
    if "channel_values" in checkpoint:
        raise _invalid("checkpoint", "channel_values go in blobs, not in the checkpoint")
    checkpoint_id = _text(checkpoint["id"], "checkpoint.id", max_length=ID_MAX)
    for field in ("channel_versions", "versions_seen"):
        if not isinstance(checkpoint[field], dict):
            raise _invalid(f"checkpoint.{field}", "must be a JSON object")
    body = storable_json(checkpoint, "checkpoint")
    if not isinstance(metadata, dict):
        raise _invalid("metadata", "must be a JSON object")
    meta = storable_json(metadata, "metadata")
    run_id = metadata.get("run_id")
    run_id = run_id if isinstance(run_id, str) and len(run_id) <= ID_MAX else ""
    return checkpoint_id, body, meta, run_id


def _rows_json(rows: list[dict[str, Any]]) -> str:
    """Rows as the one JSON parameter `jsonb_to_recordset` reads: the values' JSON text goes
    in as it is (`orjson.Fragment`: already checked, never escaped again), bytes as base64.

    Sent as `text[]` arrays instead, psycopg escaped every quote of a ~10 KB value in
    Python, one regular-expression callback each: most of a put's client-side time.
    """
    return orjson.dumps(rows).decode()


def _value_fields(value: Value, path: str) -> tuple[dict[str, Any], int]:
    """A value's `type`, `value` and `data` fields of a row of `_rows_json`, and its size."""
    kind, text, data, size = value.sql(path)
    return {
        "type": _text(kind, f"{path}.type", max_length=TYPE_MAX),
        "value": None if text is None else orjson.Fragment(text),
        "data": None if data is None else base64.b64encode(data).decode(),
        "size": size,
    }, size


def _blob_rows(blobs: Sequence[Blob]) -> tuple[str, int]:
    """The blobs, checked, as `PUT`'s rows (channel, version, type, value, data, size),
    and their size in all."""
    rows, total = [], 0
    for n, blob in enumerate(blobs):
        channel = _text(blob.channel, f"blobs[{n}].channel", max_length=CHANNEL_MAX)
        version = _version_json(blob.version, f"blobs[{n}].version")
        fields, size = _value_fields(blob.value, f"blobs[{n}].value")
        rows.append({"channel": channel, "version": orjson.Fragment(version), **fields})
        total += size
    return _rows_json(rows), total


def _write_rows(writes: Sequence[Write]) -> str:
    """The writes, checked, one per index, as `PUT_WRITES`' rows (idx, channel, type,
    value, data, size)."""
    kept: dict[int, dict[str, Any]] = {}
    for n, write in enumerate(writes):
        if isinstance(write.idx, bool) or not isinstance(write.idx, int):
            raise _invalid(f"writes[{n}].idx", "must be an integer")
        if not INT4_MIN <= write.idx <= INT4_MAX:
            raise _invalid(f"writes[{n}].idx", "out of range")
        channel = _text(write.channel, f"writes[{n}].channel", max_length=CHANNEL_MAX)
        fields, _size = _value_fields(write.value, f"writes[{n}].value")
        # One row per index, as in one statement: a special channel's last
        # write wins (two resumes of one task, say), a regular index's first.
        if write.idx < 0 or write.idx not in kept:
            kept[write.idx] = {"idx": write.idx, "channel": channel, **fields}
    return _rows_json(list(kept.values()))


class GraphThreadStore(BaseStore):
    # --- reads ------------------------------------------------------------
    def thread(self, thread_id: str) -> Task:
        task = self._find(thread_id)
        if task is None:
            raise NotFound("No such thread (task).", details={"thread_id": thread_id})
        return task

    def _find(self, thread_id: str) -> Task | None:
        # One statement: also from a request with no transaction (the hot routes), where
        # a read in a transaction of its own was five round trips.
        with hot_cursor(alone=True) as cursor:
            cursor.execute(FIND_TASK, [self.tenant.pk, task_id_for(thread_id)])
            row = cursor.fetchone()
        task = None if row is None else model_from_row(Task, row)
        # A derived task id names only the thread it was derived from.
        if task is None or (task.thread_id or task.task_id) != thread_id:
            return None
        return task

    def ensure_thread(self, thread_id: str) -> Task:
        """The thread's task, made now if there is none (a new LangGraph thread).

        One statement: the insert, or nothing when a task has the thread's task id
        (made earlier, or by a concurrent first call); only then is it read.
        """
        thread_id = valid_thread_id(thread_id)
        now = self.now()
        task_id = task_id_for(thread_id)
        values = {
            "task_id": task_id,
            "thread_id": None if task_id == thread_id else thread_id,
            "objective": f"LangGraph thread {thread_id}",
            "created_at": now,
            "updated_at": now,
        }
        names, selects, params = insert_from(Task, {"tenant_id": self.tenant.pk, **values})
        with hot_cursor(alone=True) as cursor:
            cursor.execute(NEW_TASK.format(names=names, values=selects), params)
            row = cursor.fetchone()
        if row is None:
            return self.thread(thread_id)  # 404 if the id is another thread's derived one
        return Task(pk=row[0], tenant=self.tenant, **values)

    def list_checkpoints(
        self,
        *,
        thread_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 50,
        after_key: tuple[str, int] | None = None,
        raw: bool = False,
    ) -> tuple[list[CheckpointTuple], bool]:
        """Checkpoints newest first (checkpoint_id descending), with values and writes.

        One statement: each row carries its channel values (the blobs its
        channel_versions name) and its pending writes in LangGraph's order
        (task path, task id, index). `after_key` is the keyset cursor
        (checkpoint_id, row id) of the last row of the previous page.
        Returns the rows and whether more follow; an unknown thread is 404.
        `thread_id` None searches every thread of the tenant (LangGraph's
        `list(None, filter=...)`). `raw`: the JSON fields as PostgreSQL's text
        (`orjson.Fragment`), for a caller that only writes them out again: a
        page of ten 10 KB checkpoints is not parsed to be encoded again.
        """
        where, params = self._checkpoint_filters(
            thread_id=thread_id,
            checkpoint_ns=checkpoint_ns,
            checkpoint_id=checkpoint_id,
            before=before,
            metadata=metadata,
            after_key=after_key,
        )
        with hot_cursor(alone=True) as cursor:
            cursor.execute(list_sql(" AND ".join(where)), [limit, limit, *params, limit + 1])
            rows = cursor.fetchall()
        if not rows and thread_id is not None:
            self.thread(thread_id)  # 404 for an unknown thread
        loads = _fragment if raw else _json
        return [_checkpoint_tuple(row, loads) for row in rows[:limit]], len(rows) > limit

    def _checkpoint_filters(
        self,
        *,
        thread_id: str | None,
        checkpoint_ns: str | None,
        checkpoint_id: str | None,
        before: str | None,
        metadata: dict[str, Any] | None,
        after_key: tuple[str, int] | None,
    ) -> tuple[list[str], list[Any]]:
        """The WHERE conditions of `list_checkpoints` and their parameters."""
        where = ["c.tenant_id = %s"]
        params: list[Any] = [self.tenant.pk]
        if thread_id is not None:
            where.append(
                f"c.task_id = (SELECT id FROM {TASKS} WHERE tenant_id = %s AND task_id = %s"
                f" AND {THREAD_OF} = %s)"
            )
            params.extend([self.tenant.pk, task_id_for(thread_id), thread_id])
        if checkpoint_ns is not None:
            where.append("c.checkpoint_ns = %s")
            params.append(checkpoint_ns)
        if checkpoint_id is not None:
            where.append("c.checkpoint_id = %s")
            params.append(checkpoint_id)
        if before is not None:
            where.append("c.checkpoint_id < %s")
            params.append(before)
        if metadata:
            where.append("c.metadata @> %s::jsonb")
            params.append(storable_json(metadata, "metadata"))
        if after_key is not None:
            where.append("(c.checkpoint_id, c.id) < (%s, %s)")
            params.extend(after_key)
        return where, params

    def history(
        self, task: Task, *, cursor: int | None = None, limit: int = 50
    ) -> list[GraphCheckpoint]:
        """The console's checkpoint list: newest first (by row id), `limit` + 1 rows, no bodies.

        Each row carries `pending` (its pending writes) and `interrupts` (those
        on LangGraph's interrupt channel), counted in the same query.
        """
        writes = GraphWrite.objects.filter(
            tenant=self.tenant,
            task=task,
            checkpoint_ns=OuterRef("checkpoint_ns"),
            checkpoint_id=OuterRef("checkpoint_id"),
        ).order_by()
        count = Func(F("pk"), function="COUNT")
        rows = (
            GraphCheckpoint.objects.filter(tenant=self.tenant, task=task)
            .annotate(
                pending=Subquery(writes.annotate(n=count).values("n")[:1]),
                interrupts=Subquery(
                    writes.filter(channel=INTERRUPT_CHANNEL).annotate(n=count).values("n")[:1]
                ),
            )
            .only(
                "checkpoint_ns",
                "checkpoint_id",
                "parent_checkpoint_id",
                "metadata",
                "size_bytes",
                "created_at",
            )
        )
        if cursor is not None:
            rows = rows.filter(pk__lt=cursor)
        return list(rows.order_by("-pk")[: limit + 1])

    # --- writes -----------------------------------------------------------
    def put(
        self,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint: dict[str, Any],
        metadata: dict[str, Any],
        parent_checkpoint_id: str = "",
        blobs: Sequence[Blob] = (),
    ) -> bool:
        """Store a checkpoint and the channel values new in it; True if it was new.

        One statement: the thread's row (refused when unknown or finished),
        the blobs (`ON CONFLICT DO NOTHING`: a version is written once) and
        the checkpoint (a second put of the same id replaces checkpoint and
        metadata, as LangGraph's own savers do).
        """
        checkpoint_ns = _text(checkpoint_ns, "checkpoint_ns", max_length=NS_MAX, allow_blank=True)
        parent = _text(
            parent_checkpoint_id or "", "parent_checkpoint_id", max_length=ID_MAX, allow_blank=True
        )
        checkpoint_id, body, meta, run_id = _checked_checkpoint(checkpoint, metadata)
        rows, blob_bytes = _blob_rows(blobs)
        now = self.now()
        size = len(body.encode()) + len(meta.encode()) + blob_bytes
        params = [
            self.tenant.pk,
            task_id_for(thread_id),
            thread_id,
            *TERMINAL,
            self.tenant.pk,
            checkpoint_ns,
            rows,
            self.tenant.pk,
            checkpoint_ns,
            checkpoint_id,
            parent,
            body,
            meta,
            run_id,
            size,
            now,
        ]
        for _attempt in range(2):
            with hot_cursor(alone=True) as cursor:
                cursor.execute(PUT, params)
                row = cursor.fetchone()
            if row is not None:
                return bool(row[0])
            self._refuse_unwritable(thread_id)
        raise self._not_writable(thread_id)

    def put_writes(
        self,
        *,
        thread_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        graph_task_id: str,
        graph_task_path: str = "",
        writes: Sequence[Write],
    ) -> int:
        """Store a LangGraph task's pending writes against a checkpoint; returns rows written.

        A write already stored under (checkpoint, task id, index) is kept as
        it is (LangGraph retries a task's writes); one with a negative index
        (a special channel) is replaced. One statement. The checkpoint is
        not required to exist yet: LangGraph saves a step's writes while
        the put of the checkpoint before it may still be in flight.
        """
        checkpoint_ns = _text(checkpoint_ns, "checkpoint_ns", max_length=NS_MAX, allow_blank=True)
        checkpoint_id = _text(checkpoint_id, "checkpoint_id", max_length=ID_MAX)
        graph_task_id = _text(graph_task_id, "graph_task_id", max_length=ID_MAX)
        graph_task_path = _text(
            graph_task_path, "graph_task_path", max_length=TASK_PATH_MAX, allow_blank=True
        )
        rows = _write_rows(writes)
        params = [
            self.tenant.pk,
            task_id_for(thread_id),
            thread_id,
            *TERMINAL,
            self.tenant.pk,
            checkpoint_ns,
            checkpoint_id,
            graph_task_id,
            graph_task_path,
            self.now(),
            rows,
        ]
        for _attempt in range(2):
            with hot_cursor(alone=True) as cursor:
                cursor.execute(PUT_WRITES, params)
                found, written = cursor.fetchone()
            if found:
                return written
            self._refuse_unwritable(thread_id)
        raise self._not_writable(thread_id)

    def copy_thread(
        self, *, thread_id: str, target_thread_id: str, create_target: bool = False
    ) -> dict[str, int]:
        """Copy every checkpoint, blob and pending write of a thread to another thread.

        The target is an existing task (404 `target_not_found` otherwise), or
        made now with `create_target`; rows it already has are kept. Returns
        the rows copied per table.
        """
        with self.atomic():
            source = self.thread(thread_id)
            if create_target:
                self.ensure_thread(target_thread_id)
            target = self._find(target_thread_id)
            if target is None:
                raise NotFound(
                    "No such target thread (task).",
                    code="target_not_found",
                    details={"target_thread_id": target_thread_id},
                )
            for fenced in (source, target):  # no content into a deletion, nor out of one
                if fenced.content_fenced_at is not None:
                    raise ContentDeleted("task", task_id=fenced.task_id)
            if target.status in TERMINAL_TASK_STATUSES:
                raise self._finished(target)
            tenant = self.tenant.pk
            with hot_cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {CHECKPOINTS} (tenant_id, task_id, checkpoint_ns, checkpoint_id,"
                    " parent_checkpoint_id, checkpoint, metadata, run_id, size_bytes, created_at)"
                    " SELECT tenant_id, %s, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
                    f" checkpoint, metadata, run_id, size_bytes, created_at FROM {CHECKPOINTS}"
                    " WHERE tenant_id = %s AND task_id = %s ORDER BY checkpoint_id"
                    " ON CONFLICT DO NOTHING",
                    [target.pk, tenant, source.pk],
                )
                checkpoints = cursor.rowcount
                cursor.execute(
                    f"INSERT INTO {BLOBS} (tenant_id, task_id, checkpoint_ns, channel, version,"
                    " type, value, data, size_bytes) SELECT tenant_id, %s, checkpoint_ns, channel,"
                    f" version, type, value, data, size_bytes FROM {BLOBS}"
                    " WHERE tenant_id = %s AND task_id = %s ON CONFLICT DO NOTHING",
                    [target.pk, tenant, source.pk],
                )
                blobs = cursor.rowcount
                cursor.execute(
                    f"INSERT INTO {WRITES} (tenant_id, task_id, checkpoint_ns, checkpoint_id,"
                    " graph_task_id, graph_task_path, idx, channel, type, value, data, size_bytes,"
                    " created_at) SELECT tenant_id, %s, checkpoint_ns, checkpoint_id,"
                    " graph_task_id, graph_task_path, idx, channel, type, value, data,"
                    f" size_bytes, created_at FROM {WRITES} WHERE tenant_id = %s AND task_id = %s"
                    " ON CONFLICT DO NOTHING",
                    [target.pk, tenant, source.pk],
                )
                writes = cursor.rowcount
        return {"checkpoints": checkpoints, "blobs": blobs, "writes": writes}

    def delete_thread(self, *, thread_id: str) -> dict[str, int]:
        """Delete every checkpoint, blob and pending write of the thread; the task stays.

        Refused (409 `legal_hold`) while the tenant or a session the thread's
        runs served is on legal hold. Audited with the counts.
        """
        with self.atomic():
            task = self.thread(thread_id)
            self._refuse_if_held([task])
            writes, _ = GraphWrite.objects.filter(tenant=self.tenant, task=task).delete()
            checkpoints, _ = GraphCheckpoint.objects.filter(tenant=self.tenant, task=task).delete()
            counts = {"checkpoints": checkpoints, "writes": writes}
            counts["blobs"] = self._collect_blobs(task, all_of_them=True)
            self._audit_deletion("langgraph.thread_deleted", task, counts)
        return counts

    def delete_for_runs(self, *, run_ids: Sequence[str]) -> dict[str, int]:
        """Delete the checkpoints (and their writes) LangGraph runs `run_ids` made, in any thread.

        Blobs no remaining checkpoint names go too. Audited per thread touched.
        """
        run_ids = list(run_ids)
        for n, run_id in enumerate(run_ids):
            _text(run_id, f"run_ids[{n}]", max_length=ID_MAX)
        totals = {"checkpoints": 0, "writes": 0, "blobs": 0}
        if not run_ids:
            return totals
        with self.atomic():
            checkpoints = GraphCheckpoint.objects.filter(tenant=self.tenant, run_id__in=run_ids)
            tasks = list(
                Task.objects.filter(tenant=self.tenant, pk__in=checkpoints.values("task_id"))
                .order_by("pk")
                .select_for_update()
            )
            self._refuse_if_held(tasks)
            for task in tasks:
                counts = self._delete(task, checkpoints.filter(task=task))
                counts["blobs"] = self._collect_blobs(task)
                self._audit_deletion("langgraph.runs_deleted", task, counts)
                for key, value in counts.items():
                    totals[key] += value
        return totals

    def prune(self, *, thread_id: str, strategy: str = "keep_latest") -> dict[str, int]:
        """`keep_latest`: keep each namespace's newest checkpoint (with its writes and values);
        `delete`: delete them all (as `delete_thread`)."""
        if strategy not in STRATEGIES:
            raise _invalid("strategy", f"must be one of {', '.join(STRATEGIES)}")
        if strategy == "delete":
            return self.delete_thread(thread_id=thread_id)
        with self.atomic():
            task = self.thread(thread_id)
            self._refuse_if_held([task])
            checkpoints = GraphCheckpoint.objects.filter(tenant=self.tenant, task=task)
            latest = (
                checkpoints.order_by("checkpoint_ns", "-checkpoint_id")
                .distinct("checkpoint_ns")
                .values("pk")
            )
            counts = self._delete(task, checkpoints.exclude(pk__in=latest))
            counts["blobs"] = self._collect_blobs(task)
            self._audit_deletion("langgraph.thread_pruned", task, counts)
        return counts

    # --- helpers ----------------------------------------------------------
    def _delete(self, task: Task, checkpoints) -> dict[str, int]:
        """Delete `checkpoints` (a queryset of one thread's) and the writes made against them."""
        writes = GraphWrite.objects.filter(tenant=self.tenant, task=task).filter(
            Exists(
                checkpoints.filter(
                    checkpoint_ns=OuterRef("checkpoint_ns"), checkpoint_id=OuterRef("checkpoint_id")
                )
            )
        )
        written, _ = writes.delete()
        deleted, _ = checkpoints.delete()
        return {"checkpoints": deleted, "writes": written}

    def _collect_blobs(self, task: Task, *, all_of_them: bool = False) -> int:
        """Delete the thread's blobs no remaining checkpoint names; returns how many."""
        with hot_cursor() as cursor:
            cursor.execute(
                f"DELETE FROM {BLOBS} b WHERE b.tenant_id = %s AND b.task_id = %s"
                + (
                    ""
                    if all_of_them
                    else f" AND NOT EXISTS (SELECT 1 FROM {CHECKPOINTS} c"
                    " WHERE c.tenant_id = b.tenant_id AND c.task_id = b.task_id"
                    " AND c.checkpoint_ns = b.checkpoint_ns"
                    " AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)"
                ),
                [self.tenant.pk, task.pk],
            )
            return cursor.rowcount

    def _refuse_if_held(self, tasks: list[Task]) -> None:
        """A deletion is refused while the tenant, or a session a thread's runs served, is held.

        The thread's runs are read through the task's reverse relation
        (`Task.runs`): tasks_app imports no other domain.
        """
        if not tasks:
            return
        if self.tenant.legal_hold:
            raise Conflict(
                "The tenant is on legal hold: nothing may be deleted.",
                code="legal_hold",
                details={"tenant": self.tenant.slug},
            )
        held = sorted(
            Task.objects.filter(
                tenant=self.tenant, pk__in=[t.pk for t in tasks], runs__session__legal_hold=True
            )
            .values_list("task_id", flat=True)
            .distinct()
        )
        if held:
            raise Conflict(
                "A session these threads served is on legal hold: nothing may be deleted.",
                code="legal_hold",
                details={"task_ids": held},
            )

    def _audit_deletion(self, action: str, task: Task, counts: dict[str, int]) -> None:
        """Counts only: what the runtime wrote never enters the append-only audit table."""
        self.audit(
            action,
            target_type="task",
            target_id=task.task_id,
            after={key: counts[key] for key in sorted(counts)},
        )

    def _not_writable(self, thread_id: str) -> Exception:
        task = self.thread(thread_id)  # 404 for an unknown thread
        if task.content_fenced_at is not None:
            return ContentDeleted("task", task_id=task.task_id)
        return self._finished(task)

    def _refuse_unwritable(self, thread_id: str) -> None:
        """After a hot statement found no writable task: raise why, unless there is one now.

        A thread's task made by a concurrent first call (a put and a write of a
        new thread race) commits between the statement and this look: the
        caller runs its statement again.
        """
        task = self.thread(thread_id)  # 404 for an unknown thread
        if task.content_fenced_at is not None or task.status in TERMINAL_TASK_STATUSES:
            raise self._not_writable(thread_id)

    @staticmethod
    def _finished(task: Task) -> Conflict:
        return Conflict(
            f"The task is {task.status}; its thread takes no more checkpoints.",
            code="invalid_transition",
            details={"status": task.status},
        )


def _fragment(value: Any) -> Any:
    """jsonb's text as it is, for orjson to write (None stays None; parsed stays parsed)."""
    return orjson.Fragment(value) if isinstance(value, str) else value


def _json(value: Any) -> Any:
    """jsonb as the hot cursor returns it (text, with Django's loader) or already parsed."""
    if value is None or not isinstance(value, str):
        return value
    return json.loads(value)
