"""The tables and the one way rows are written: `INSERT ... SELECT`, columns as SQL expressions."""

from __future__ import annotations

import psycopg
from django.db import connection as django_connection
from django.db import models


def tables() -> dict[str, str]:
    from approvals_app.models import ApprovalRequest
    from audit_app.models import AuditEvent
    from effects_app.models import ExternalEffect
    from lifecycle_app.models import Deletion
    from runs_app.models import NodeExecution, Run, RunEvent, RunTransition
    from sessions_app.models import (
        ItemAppend,
        Session,
        SessionAttachment,
        SessionItem,
    )
    from tasks_app.models import Task, TaskCheckpoint

    return {
        "session": Session._meta.db_table,
        "item": SessionItem._meta.db_table,
        "item_append": ItemAppend._meta.db_table,
        "attachment": SessionAttachment._meta.db_table,
        "deletion": Deletion._meta.db_table,
        "run": Run._meta.db_table,
        "run_event": RunEvent._meta.db_table,
        "run_transition": RunTransition._meta.db_table,
        "node": NodeExecution._meta.db_table,
        "task": Task._meta.db_table,
        "checkpoint": TaskCheckpoint._meta.db_table,
        "approval": ApprovalRequest._meta.db_table,
        "effect": ExternalEffect._meta.db_table,
        "audit": AuditEvent._meta.db_table,
    }


def _model_for(table: str) -> type[models.Model]:
    from django.apps import apps

    for model in apps.get_models():
        if model._meta.db_table == table:
            return model
    raise LookupError(table)


def insert_select(
    cur: psycopg.Cursor, table: str, exprs: dict[str, str], tail: str, params: dict
) -> int:
    """`INSERT INTO table (...) SELECT <exprs> <tail>`.

    Columns the generator does not name (another helper may add fields after
    this was written) get their model default, or NULL when nullable, so the
    load keeps working as the models grow.
    """
    model = _model_for(table)
    params = dict(params)
    exprs = dict(exprs)
    for f in model._meta.concrete_fields:
        if f.primary_key or f.column in exprs or getattr(f, "generated", False):
            continue  # (PostgreSQL computes generated columns)
        if f.has_default():
            key = f"_default_{f.column}"
            params[key] = f.get_db_prep_save(f.get_default(), django_connection)
            exprs[f.column] = f"%({key})s"
        elif isinstance(f, models.DateTimeField) and (f.auto_now or f.auto_now_add):
            exprs[f.column] = "%(now)s"
        elif not f.null:
            raise RuntimeError(
                f"bench/generate/ does not know how to fill {table}.{f.column}: add it"
            )
    columns = ", ".join(exprs)
    values = ",\n  ".join(exprs.values())
    cur.execute(f"INSERT INTO {table} ({columns})\nSELECT {values}\n{tail}", params)
    return cur.rowcount


# --- per-tenant SQL ---------------------------------------------------------

LPAD = "lpad(({})::text, 6, '0')"
ALL = "true"


def number_of(column: str) -> str:
    """The number in a generated public id (`sess_000042` -> 42); NULL for other ids."""
    return f"CASE WHEN {column} ~ '^[a-z]+_[0-9]+$' THEN split_part({column}, '_', 2)::int END"


def part_of(expr: str, part: tuple[int, int]) -> str:
    """SQL condition: `expr` falls in chunk `part` = (index, count)."""
    index, count = part
    return ALL if count == 1 else f"({expr}) %% {int(count)} = {int(index)}"
