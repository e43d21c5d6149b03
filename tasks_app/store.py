"""TaskStateStore: durable task state saved with a version check, and append-only checkpoints.

Runtime writes (create, save, append_checkpoint) are the hot path and are not
audited; the version counter and the numbered checkpoints are their history.

A task that served a session whose content deletion was requested is fenced
(`content_fenced_at`): saves and checkpoints are 409 `content_deleted`. Its
content (`CONTENT`: checkpoint bodies, objective and constraints) is removed
through `redact_content` by the lifecycle orchestrator.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import IntegrityError
from django.db.models import Q, QuerySet

from stateroom import ports
from stateroom.content import TASK, Batch, ContentClass, content_class, redact_in_key_order
from stateroom.errors import Conflict, ContentDeleted, NotFound, Unprocessable, field_path
from stateroom.ids import PUBLIC_ID_RULE, is_valid_public_id, new_public_id
from stateroom.jsondata import ensure_domain_data, storable_json
from stateroom.rows import from_values
from stateroom.sql import hot_cursor
from stateroom.store import BaseStore

from .models import (
    TERMINAL_TASK_STATUSES,
    GraphBlob,
    GraphCheckpoint,
    GraphWrite,
    Task,
    TaskCheckpoint,
    TaskStatus,
)
from .state import DurableTaskState

_TERMINAL = sorted(TERMINAL_TASK_STATUSES)
assert len(_TERMINAL) == 3  # the placeholders in append_checkpoint
_TASKS = Task._meta.db_table
_CHECKPOINTS = TaskCheckpoint._meta.db_table
_CHECKPOINT_TENANT = TaskCheckpoint._meta.get_field("tenant")


__all__ = ["CONTENT", "DurableTaskState", "TaskStateStore"]

# Non-terminal statuses move freely between each other and to any terminal one;
# a terminal task is never written again.
TASK_TRANSITIONS: dict[str, frozenset[str]] = {
    TaskStatus.ACTIVE: frozenset(TaskStatus.values),
    TaskStatus.WAITING: frozenset(TaskStatus.values),
    TaskStatus.COMPLETED: frozenset(),
    TaskStatus.FAILED: frozenset(),
    TaskStatus.CANCELLED: frozenset(),
}

NODE_SET_FIELDS = ("completed_nodes", "pending_nodes")
LIST_FIELDS = ("pending_approvals", "artifact_refs", "external_effect_records")
SAVE_FIELDS = frozenset({"plan_version", "status", *NODE_SET_FIELDS, *LIST_FIELDS})
PLAN_VERSION_MAX = Task._meta.get_field("plan_version").max_length
NODE_ID_MAX = TaskCheckpoint._meta.get_field("node_id").max_length
# Each string of a task's lists (node names, approval ids, refs) and of its constraints.
MAX_LIST_ITEM_LENGTH = 200
MAX_CONSTRAINT_LENGTH = 2000
# A page of a task's checkpoint history (the API's `?limit=`).
CHECKPOINT_PAGE_SIZE = 20
MAX_CHECKPOINT_PAGE_SIZE = 100

CHECKPOINT_BODIES = "checkpoint_bodies"
TASK_DESCRIPTIONS = "task_descriptions"
GRAPH_VALUES = "graph_values"
GRAPH_WRITES = "graph_writes"
GRAPH_METADATA = "graph_checkpoint_metadata"
CONTENT: tuple[ContentClass, ...] = (
    ContentClass(
        name=CHECKPOINT_BODIES,
        label="Checkpoint bodies",
        table=_CHECKPOINTS,
        fields=("state",),
        container=TASK,
        removal="fields cleared",
        retention="checkpoints_days",
        kept="Each checkpoint's id, seq, schema version, node, size and time.",
    ),
    ContentClass(
        name=TASK_DESCRIPTIONS,
        label="Task objectives and constraints",
        table=_TASKS,
        fields=("objective", "constraints"),
        container=TASK,
        removal="fields cleared",
        retention="checkpoints_days",
        kept=(
            "The task row: ids, status, version, node ids, artifact and effect references, "
            "the latest checkpoint id and times; what the task did, not what it was told."
        ),
    ),
    ContentClass(
        name=GRAPH_VALUES,
        label="LangGraph channel values",
        table=GraphBlob._meta.db_table,
        fields=("value", "data"),
        container=TASK,
        removal="rows deleted",
        retention="checkpoints_days",
        kept="Nothing of the values; each checkpoint still names the versions it saw.",
    ),
    ContentClass(
        name=GRAPH_WRITES,
        label="LangGraph pending writes",
        table=GraphWrite._meta.db_table,
        fields=("value", "data"),
        container=TASK,
        removal="rows deleted",
        retention="checkpoints_days",
        kept="Nothing of the writes.",
    ),
    ContentClass(
        name=GRAPH_METADATA,
        label="LangGraph checkpoint metadata",
        table=GraphCheckpoint._meta.db_table,
        fields=("metadata",),
        container=TASK,
        removal="fields cleared",
        retention="checkpoints_days",
        kept=(
            "Each LangGraph checkpoint's id, namespace, parent, channel versions and time: "
            "the thread's shape, without what flowed through it."
        ),
    ),
)


def _invalid(field: str, message: str) -> Unprocessable:
    return Unprocessable(f"{field}: {message}", details={field: [message]})


def _string_list(
    field: str, value: Any, *, allow_set: bool = False, max_length: int = MAX_LIST_ITEM_LENGTH
) -> list[str]:
    """A list of strings of at most `max_length` characters; node fields may also be given
    as the seed's `set[str]`."""
    accepted = list | tuple | set | frozenset if allow_set else list | tuple
    if not isinstance(value, accepted):
        ensure_domain_data(value, field)
        raise _invalid(field, "must be a list of strings")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            ensure_domain_data(item, field_path(field, index))
            raise _invalid(field, "must be a list of strings")
        if len(item) > max_length:
            raise _invalid(field_path(field, index), f"at most {max_length} characters")
    return list(value)


def _checkpoint_body(schema_version: int, state: dict, node_id: str) -> str:
    """A checkpoint's checked input: its state as the canonical JSON it is stored as."""
    if isinstance(schema_version, bool) or not isinstance(schema_version, int):
        raise _invalid("schema_version", "must be an integer")
    if schema_version < 1:
        raise _invalid("schema_version", "must be at least 1")
    body = storable_json(state, "state")
    if not isinstance(state, dict):
        raise _invalid("state", "must be a JSON object")
    if not isinstance(node_id, str) or len(node_id) > NODE_ID_MAX:
        raise _invalid("node_id", f"must be a string of at most {NODE_ID_MAX} characters")
    return body


class TaskStateStore(BaseStore):
    # --- reads ------------------------------------------------------------
    def load(self, task_id: str) -> Task:
        with self.reading():
            task = Task.objects.filter(tenant=self.tenant, task_id=task_id).first()
        if task is None:
            raise NotFound("No such task.", details={"task_id": task_id})
        return task

    def get(self, task_id: str) -> Task:
        return self.load(task_id)

    def list_tasks(self, *, status: str | None = None) -> QuerySet[Task]:
        queryset = Task.objects.filter(tenant=self.tenant)
        if status:
            if status not in TaskStatus.values:
                raise _invalid("status", f"must be one of {TaskStatus.values}")
            queryset = queryset.filter(status=status)
        return queryset

    @staticmethod
    def to_state(task: Task) -> DurableTaskState:
        return DurableTaskState(
            task_id=task.task_id,
            objective=task.objective,
            constraints=list(task.constraints),
            plan_version=task.plan_version or None,
            completed_nodes=set(task.completed_nodes),
            pending_nodes=set(task.pending_nodes),
            pending_approvals=list(task.pending_approvals),
            artifact_refs=list(task.artifact_refs),
            external_effect_records=list(task.external_effect_records),
            latest_checkpoint_id=task.latest_checkpoint_id or None,
            schema_version=task.schema_version,
        )

    def latest_checkpoint(self, task_id: str) -> dict[str, Any]:
        """The checkpoint a resuming process starts from, as the API renders it.

        `checkpoint_history`'s one statement with a page of one: an unknown task
        (404) is told from a task with no checkpoint yet (404) without a second query.
        """
        page = self.checkpoint_history(task_id, limit=1)
        if not page:
            raise NotFound("This task has no checkpoint yet.", details={"task_id": task_id})
        return page[0]

    def checkpoint_history(
        self, task_id: str, *, limit: int = CHECKPOINT_PAGE_SIZE, before_seq: int | None = None
    ) -> list[dict[str, Any]]:
        """The task's checkpoints, newest first, `limit` of them before `before_seq`.

        Rows go straight to the dicts the API renders (no model is built), in
        one statement whose driving row is the task itself (`LEFT JOIN
        LATERAL`), so an unknown task (404) is told from an empty page without
        a second query. A deleted body reads `state: null`.
        """
        bound = " AND seq < %s" if before_seq is not None else ""
        sql = (
            "SELECT c.checkpoint_id, c.seq, c.schema_version, c.node_id, c.state, c.size_bytes,"
            f" c.created_at, c.body_deleted_at FROM {_TASKS} k LEFT JOIN LATERAL ("
            "SELECT checkpoint_id, seq, schema_version, node_id, state, size_bytes, created_at,"
            f" body_deleted_at FROM {_CHECKPOINTS} WHERE tenant_id = k.tenant_id"
            f" AND task_id = k.id{bound} ORDER BY seq DESC LIMIT %s) c ON true"
            " WHERE k.tenant_id = %s AND k.task_id = %s"
        )
        params: list[Any] = [*([before_seq] if before_seq is not None else []), limit]
        with hot_cursor(alone=True) as cursor:
            cursor.execute(sql, [*params, self.tenant.pk, task_id])
            rows = cursor.fetchall()
        if not rows:
            raise NotFound("No such task.", details={"task_id": task_id})
        loads = json.loads
        return [
            {
                "checkpoint_id": checkpoint_id,
                "task_id": task_id,
                "seq": seq,
                "schema_version": schema_version,
                "node_id": node_id,
                "state": None if body_deleted_at else loads(state),
                "size_bytes": size_bytes,
                "created_at": created_at,
                "body_deleted_at": body_deleted_at,
            }
            for (
                checkpoint_id,
                seq,
                schema_version,
                node_id,
                state,
                size_bytes,
                created_at,
                body_deleted_at,
            ) in rows
            if checkpoint_id is not None
        ]

    def get_checkpoint(self, *, task_id: str, checkpoint_id: str) -> TaskCheckpoint:
        task = self.load(task_id)
        checkpoint = TaskCheckpoint.objects.filter(
            tenant=self.tenant, task=task, checkpoint_id=checkpoint_id
        ).first()
        if checkpoint is None:
            raise NotFound("No such checkpoint.", details={"checkpoint_id": checkpoint_id})
        checkpoint.task = task
        return checkpoint

    def list_checkpoints(self, task_id: str) -> QuerySet[TaskCheckpoint]:
        task = self.load(task_id)
        return TaskCheckpoint.objects.filter(tenant=self.tenant, task=task).select_related("task")

    # --- writes -----------------------------------------------------------
    def create(
        self, *, task_id: str | None = None, objective: str, constraints: list[str] | None = None
    ) -> Task:
        if task_id is not None and not is_valid_public_id(task_id):
            raise _invalid("task_id", PUBLIC_ID_RULE)
        if not isinstance(objective, str) or not objective.strip():
            raise _invalid("objective", "required")
        constraints = _string_list(
            "constraints", constraints or [], max_length=MAX_CONSTRAINT_LENGTH
        )
        now = self.now()
        task = Task(
            tenant=self.tenant,
            task_id=task_id or new_public_id("task"),
            objective=objective,
            constraints=constraints,
            created_at=now,
            updated_at=now,
        )
        try:
            with self.atomic():
                task.save(force_insert=True)
        except IntegrityError as exc:
            raise Conflict(
                "A task with this id already exists.",
                code="task_exists",
                details={"task_id": task.task_id},
            ) from exc
        return task

    def save(self, *, task_id: str, expected_version: int, **fields: Any) -> Task:
        """Write state fields if the task is still at `expected_version`; version += 1."""
        with self.atomic():
            task = self.load(task_id)
            changes = self._validate_fields(fields)
            self._require_ids(changes)
            if task.content_fenced_at is not None:
                raise ContentDeleted("task", task_id=task_id)
            if task.version != expected_version:
                raise self._version_conflict(task.version, expected_version)
            new_status = changes.get("status", task.status)
            if new_status not in TASK_TRANSITIONS[task.status]:
                raise Conflict(
                    f"A task cannot go from {task.status} to {new_status}.",
                    code="invalid_transition",
                    details={"status": task.status, "requested": new_status},
                )
            changes["updated_at"] = self.now()
            changes["version"] = expected_version + 1
            # The version in the filter is the claim: a writer that read the same
            # version and got here first leaves 0 rows for us.
            won = Task.objects.filter(
                tenant=self.tenant,
                pk=task.pk,
                version=expected_version,
                content_fenced_at__isnull=True,
            ).update(**changes)
            if not won:
                current, fenced = (
                    Task.objects.filter(tenant=self.tenant, pk=task.pk)
                    .values_list("version", "content_fenced_at")
                    .get()
                )
                if fenced is not None:
                    raise ContentDeleted("task", task_id=task_id)
                raise self._version_conflict(current, expected_version)
            for name, value in changes.items():
                setattr(task, name, value)
        return task

    def append_checkpoint(
        self, *, task_id: str, schema_version: int, state: dict, node_id: str = ""
    ) -> TaskCheckpoint:
        """Append the next numbered checkpoint; it becomes the task's latest.

        The seq comes from one `UPDATE task … last_checkpoint_seq + 1 …
        RETURNING`, whose row lock orders concurrent appends to one task, so
        seqs are gap-free and follow commit order; the UPDATE also refuses a
        finished task. The task's `version` is not bumped: it counts state
        saves, and a checkpoint does not change those fields. The checkpoint
        row is inserted in the same statement. The state is
        serialized once: its canonical JSON is both the stored body and its size.
        """
        body = _checkpoint_body(schema_version, state, node_id)
        checkpoint_id = new_public_id("ckpt")
        size_bytes = len(body.encode())
        created_at = self.now()
        row = self._insert_checkpoint(
            task_id=task_id,
            checkpoint_id=checkpoint_id,
            schema_version=schema_version,
            node_id=node_id,
            body=body,
            size_bytes=size_bytes,
            created_at=created_at,
        )
        if row is None:
            raise self._why_no_checkpoint(task_id)
        task_pk, seq, pk = row
        # The saved row, as the ORM would read it back (the state as given: it is plain
        # JSON data, so it reads back equal), with its tenant and task known.
        checkpoint = from_values(
            TaskCheckpoint,
            {
                "id": pk,
                "tenant_id": self.tenant.pk,
                "task_id": task_pk,
                "checkpoint_id": checkpoint_id,
                "seq": seq,
                "schema_version": schema_version,
                "node_id": node_id,
                "state": state,
                "size_bytes": size_bytes,
                "created_at": created_at,
                "body_deleted_at": None,
            },
        )
        _CHECKPOINT_TENANT.set_cached_value(checkpoint, self.tenant)
        checkpoint.task = from_values(Task, {"id": task_pk, "task_id": task_id})
        return checkpoint

    def _insert_checkpoint(
        self,
        *,
        task_id: str,
        checkpoint_id: str,
        schema_version: int,
        node_id: str,
        body: str,
        size_bytes: int,
        created_at: datetime,
    ) -> tuple[int, int, int] | None:
        """One statement: the task's next seq and the checkpoint row; `(task pk, seq, pk)`,
        None when the task is unknown, finished or fenced (nothing written)."""
        claim = (
            f"UPDATE {_TASKS} SET last_checkpoint_seq = last_checkpoint_seq + 1,"
            " latest_checkpoint_id = %s, schema_version = %s, updated_at = %s"
            " WHERE tenant_id = %s AND task_id = %s AND status NOT IN (%s, %s, %s)"
            " AND content_fenced_at IS NULL RETURNING id, last_checkpoint_seq"
        )
        params = [
            checkpoint_id,
            schema_version,
            created_at,
            self.tenant.pk,
            task_id,
            *_TERMINAL,
        ]
        with hot_cursor(alone=True) as cursor:
            cursor.execute(
                f"WITH t AS ({claim}), c AS (INSERT INTO {_CHECKPOINTS} (tenant_id, task_id,"
                " checkpoint_id, seq, schema_version, node_id, state, size_bytes, created_at)"
                " SELECT %s, t.id, %s, t.last_checkpoint_seq, %s, %s, %s::jsonb, %s, %s FROM t"
                " RETURNING id) SELECT t.id, t.last_checkpoint_seq, c.id FROM t, c",
                [
                    *params,
                    self.tenant.pk,
                    checkpoint_id,
                    schema_version,
                    node_id,
                    body,
                    size_bytes,
                    created_at,
                ],
            )
            return cursor.fetchone()

    def _why_no_checkpoint(self, task_id: str) -> Exception:
        """Why a checkpoint was refused: 404 unknown task, 409 fenced or finished."""
        with self.reading():
            task = self.load(task_id)  # 404 for an unknown task
        if task.content_fenced_at is not None:
            return ContentDeleted("task", task_id=task_id)
        return Conflict(
            f"The task is {task.status}; it takes no more checkpoints.",
            code="invalid_transition",
            details={"status": task.status},
        )

    # --- lifecycle: the fence, content ----------------------------------------
    CONTENT = CONTENT

    def pks_of(self, task_pks: Iterable[int]) -> list[tuple[int, str]]:
        """(pk, task_id) of these tasks of this tenant, in pk order."""
        return list(
            Task.objects.filter(tenant=self.tenant, pk__in=list(task_pks))
            .order_by("pk")
            .values_list("pk", "task_id")
        )

    def fence_content(self, task_pks: Iterable[int]) -> int:
        """These tasks take no more saves or checkpoints (409 `content_deleted`). Idempotent."""
        return Task.objects.filter(
            tenant=self.tenant, pk__in=list(task_pks), content_fenced_at__isnull=True
        ).update(content_fenced_at=self.now())

    def _content_rows(self, name: str, tasks: Iterable[int]) -> tuple[QuerySet, str]:
        content_class(CONTENT, name)
        tasks = list(tasks)
        if name == CHECKPOINT_BODIES:
            rows = TaskCheckpoint.objects.filter(tenant=self.tenant, task__in=tasks)
            return rows.filter(body_deleted_at__isnull=True), "seq"
        if name == GRAPH_VALUES:
            return GraphBlob.objects.filter(tenant=self.tenant, task__in=tasks), "pk"
        if name == GRAPH_WRITES:
            return GraphWrite.objects.filter(tenant=self.tenant, task__in=tasks), "pk"
        if name == GRAPH_METADATA:
            rows = GraphCheckpoint.objects.filter(tenant=self.tenant, task__in=tasks)
            return rows.exclude(metadata={}), "pk"
        rows = Task.objects.filter(tenant=self.tenant, pk__in=tasks)
        return rows.filter(~Q(objective="") | ~Q(constraints=[])), "pk"

    def content_left(self, name: str, containers: Iterable[int]) -> int:
        return self._content_rows(name, containers)[0].count()

    def redact_content(
        self, name: str, container: int, *, after: Any, limit: int, now: datetime
    ) -> Batch:
        """Remove the content of up to `limit` rows of one task (in the caller's transaction)."""
        rows, key = self._content_rows(name, [container])
        if name == CHECKPOINT_BODIES:

            def remove(qs: QuerySet) -> int:
                return qs.update(state=None, body_deleted_at=now)
        elif name in (GRAPH_VALUES, GRAPH_WRITES):

            def remove(qs: QuerySet) -> int:
                return qs.delete()[0]
        elif name == GRAPH_METADATA:

            def remove(qs: QuerySet) -> int:
                return qs.update(metadata={})
        else:

            def remove(qs: QuerySet) -> int:
                return qs.update(objective="", constraints=[])

        return redact_in_key_order(rows, key, after=after, limit=limit, remove=remove)

    def _require_ids(self, changes: dict[str, Any]) -> None:
        """Approval and effect ids in the state name objects of this tenant (404 otherwise)."""
        for field, kind in (
            ("pending_approvals", "approval"),
            ("external_effect_records", "effect"),
        ):
            wanted = set(changes.get(field) or ())
            if not wanted:
                continue
            found = ports.found_ids(kind, self.tenant, wanted)
            if missing := sorted(wanted - found):
                raise NotFound(
                    f"No such {kind}: {', '.join(missing[:5])}.",
                    details={field: missing},
                )

    @staticmethod
    def _version_conflict(current: int, expected: int) -> Conflict:
        return Conflict(
            f"The task is at version {current}, not {expected}.",
            code="version_conflict",
            details={"current_version": current, "expected_version": expected},
        )

    @staticmethod
    def _validate_fields(fields: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(fields) - SAVE_FIELDS)
        if unknown:
            raise Unprocessable(
                "Unknown task state fields: " + ", ".join(unknown),
                details={name: ["unknown field"] for name in unknown},
            )
        changes: dict[str, Any] = {}
        for name in NODE_SET_FIELDS:
            if name in fields:
                changes[name] = sorted(set(_string_list(name, fields[name], allow_set=True)))
        for name in LIST_FIELDS:
            if name in fields:
                changes[name] = _string_list(name, fields[name])
        if "plan_version" in fields:
            plan_version = fields["plan_version"]
            if plan_version is not None and not isinstance(plan_version, str):
                ensure_domain_data(plan_version, "plan_version")
                raise _invalid("plan_version", "must be a string or null")
            if plan_version is not None and len(plan_version) > PLAN_VERSION_MAX:
                raise _invalid("plan_version", f"at most {PLAN_VERSION_MAX} characters")
            changes["plan_version"] = plan_version or ""
        if "status" in fields:
            if fields["status"] not in TaskStatus.values:
                ensure_domain_data(fields["status"], "status")
                raise _invalid("status", f"must be one of {TaskStatus.values}")
            changes["status"] = fields["status"]
        return changes
