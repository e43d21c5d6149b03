"""The statements of the run store: one conditional UPDATE … RETURNING per change."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection

from sessions_app.models import Session
from stateroom.rows import from_row
from stateroom.sql import columns
from tasks_app.models import Task

from ..models import TERMINAL_RUN_STATUSES, Run, RunStatus, RunTransition

_RUNS = Run._meta.db_table
_TRANSITIONS = RunTransition._meta.db_table
RUN_COLUMNS = columns(Run)
RUN_WIDTH = len(Run._meta.concrete_fields)
SESSION_WIDTH = len(Session._meta.concrete_fields)
GET_RUN = (
    f"SELECT {columns(Run, 'r')}, {columns(Session, 's')}, {columns(Task, 'k')} FROM {_RUNS} r"
    f" LEFT JOIN {Session._meta.db_table} s ON s.tenant_id = r.tenant_id AND s.id = r.session_id"
    f" LEFT JOIN {Task._meta.db_table} k ON k.tenant_id = r.tenant_id AND k.id = r.task_id"
    " WHERE r.tenant_id = %s AND r.run_id = %s"
)
# The public ids of a changed run's session and task, for its API answer.
PUBLIC_IDS = (
    f"(SELECT session_id FROM {Session._meta.db_table}"
    " WHERE tenant_id = r.tenant_id AND id = r.session_id),"
    f" (SELECT task_id FROM {Task._meta.db_table} WHERE tenant_id = r.tenant_id AND id = r.task_id)"
)


@dataclass(frozen=True)
class Seen:
    """What a refused compare-and-set read of the run, in the same statement."""

    version: int
    status: str
    content_fenced_at: datetime | None
    claimed_by: str
    claim_until: datetime | None

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_RUN_STATUSES


SEEN_COLUMNS = '"version", "status", "content_fenced_at", "claimed_by", "claim_until"'
SEEN_WIDTH = 5


def run_from(row: Sequence[Any]) -> Run:
    run = from_row(Run, row[:RUN_WIDTH])
    run.session_public_id, run.task_public_id = row[RUN_WIDTH:]
    return run


@dataclass(frozen=True)
class Transition:
    """The RunTransition row an update writes: what changed, who (and which worker), when."""

    changes: dict[str, Any]
    worker: str | None
    now: datetime


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


# `json.dumps(changes, cls=DjangoJSONEncoder)`, the encoder made once.
encode_changes = DjangoJSONEncoder().encode
# A run's fields by name and by attname, for the parameters of an update.
RUN_FIELDS = {
    **{field.attname: field for field in Run._meta.concrete_fields},
    **{field.name: field for field in Run._meta.concrete_fields},
}


@cache
def status_in(statuses: tuple[str, ...]) -> str:
    if not statuses:
        return "1 = 0"
    unknown = set(statuses) - set(RunStatus.values)
    if unknown:  # never: only the state machine's statuses are written into SQL
        raise ValueError(f"not run statuses: {sorted(unknown)}")
    return '"status" IN (' + ", ".join("'" + status + "'" for status in statuses) + ")"


# Columns an update fills only while empty: a run keeps the first trace id it is given.
KEEP_FIRST = frozenset({"trace_id"})


@cache
def update_text(
    set_names: tuple[str, ...],
    increment_names: tuple[str, ...],
    where_columns: tuple[str, ...],
    conditions: tuple[str, ...],
    bump_version: bool,
    with_transition: bool,
) -> str:
    """`_update_sql`'s text for one shape of update (every value a `%s`)."""
    qn = connection.ops.quote_name
    assignments = [
        f"{qn(RUN_FIELDS[name].column)} = COALESCE({qn(RUN_FIELDS[name].column)}, %s)"
        if name in KEEP_FIRST
        else f"{qn(RUN_FIELDS[name].column)} = %s"
        for name in set_names
    ]
    assignments += [f"{qn(name)} = {qn(name)} + %s" for name in increment_names]
    if bump_version:
        assignments.append('"previous_status" = "status", "version" = "version" + 1')
    clauses = ['"tenant_id" = %s', *(f"{qn(column)} = %s" for column in where_columns)]
    clauses += conditions
    sql = (
        f"r AS (UPDATE {_RUNS} SET {', '.join(assignments)} "
        f"WHERE {' AND '.join(clauses)} RETURNING {RUN_COLUMNS})"
    )
    if with_transition:
        sql += (
            f", t AS (INSERT INTO {_TRANSITIONS} (tenant_id, run_id, version,"
            " from_status, to_status, changes, actor_label, created_at)"
            " SELECT r.tenant_id, r.id, r.version, r.previous_status, r.status, %s::jsonb, %s, %s"
            " FROM r)"
        )
    return sql
