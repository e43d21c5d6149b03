"""Hot-path SQL: statements PostgreSQL parses and plans once per connection.

Django's psycopg 3 cursors bind parameters on the client, so the server
parses and plans every statement anew. The few statements on the hot path of
every agent step (append items, compare-and-set, checkpoints, effects) run
through `hot_cursor()` instead: a psycopg cursor binding on the server, whose
statements psycopg prepares after `DB_PREPARE_THRESHOLD` runs. It is still
Django's connection and transaction, wrapped like Django's own cursors, so
query logging, `CaptureQueriesContext` and execute wrappers see it.

Hot statements name their columns (no `*`): a prepared statement must keep
its result shape. They bypass the
django-scopes manager, so each filters on `tenant_id` itself, as every store
query does; PostgreSQL's row-level security applies beneath them as it does
beneath the ORM (the tenant transaction's `app.tenant_id`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.db.models import JSONField, Model
from django_scopes import get_scope
from django_scopes.exceptions import ScopeError

__all__ = [
    "columns",
    "db_value",
    "hot_cursor",
    "insert_from",
    "known",
    "model_from_row",
]

M = TypeVar("M", bound=Model)


@contextmanager
def hot_cursor(
    using: str = DEFAULT_DB_ALIAS, *, tenant_owned: bool = True
) -> Iterator[CursorWrapper]:
    """The hot-path cursor; for tenant-owned tables only inside a tenant scope.

    Like django-scopes' manager, it raises ScopeError outside `in_tenant` (or
    the request's scope) unless scopes are disabled: on PostgreSQL, RLS would
    answer such a statement with nothing. `tenant_owned=False` is for the
    statements that come before a tenant is known (token lookup, the tenant
    setting itself).
    """
    if tenant_owned:
        _require_tenant_scope()
    connection = connections[using]
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = _raw_cursor(connection)
    if connection.queries_logged:
        yield _LoggedHotCursor(raw, connection)
    else:
        yield connection.make_cursor(raw)


def _require_tenant_scope() -> None:
    current = get_scope()
    if current.get("_enabled", True) and "tenant" not in current:
        raise ScopeError(
            "A hot statement on tenant-owned tables ran outside a tenant scope;"
            " enter in_tenant(tenant) first."
        )


def _raw_cursor(connection: Any) -> Any:
    """The connection's one server-binding cursor, made on first use after each connect.

    Reused, not closed: a psycopg cursor's set-up (its own adapters map, the
    loader below) is a good part of a hot statement's Python cost. Django's
    connections are per thread, and so is this cursor.
    """
    raw = getattr(connection, "_stateroom_hot_cursor", None)
    if raw is None or raw.connection is not connection.connection or raw.closed:
        from django.db.backends.postgresql.base import ServerBindingCursor
        from psycopg.types.datetime import TimestamptzLoader

        with connection.wrap_database_errors:
            raw = ServerBindingCursor(connection.connection)
        # psycopg's own (C) timestamptz loader, not Django's Python subclass
        # of it: the same aware UTC datetimes, about 8 µs a value cheaper.
        raw.adapters.register_loader("timestamptz", TimestamptzLoader)
        connection._stateroom_hot_cursor = raw
    return raw


class _LoggedHotCursor(CursorDebugWrapper):
    """Logs the statement with its values in, as Django logs its own (not `$1`)."""

    def execute(self, sql, params=None):
        logged = self.db.ops.compose_sql(sql, params) if params else sql
        with self.debug_sql(logged, params):
            return CursorWrapper.execute(self, sql, params)


def columns(model: type[Model], table: str | None = None) -> str:
    """Every concrete column of `model`, quoted, for a hot statement's SELECT or RETURNING."""
    prefix = f"{table}." if table else ""
    return ", ".join(f'{prefix}"{field.column}"' for field in model._meta.concrete_fields)


def model_from_row(model: type[M], row: Sequence[Any], using: str = DEFAULT_DB_ALIAS) -> M:
    """An instance of `model` from a row of `columns(model)`, converted as the ORM converts."""
    connection = connections[using]
    converters = _converters(model, using)
    values = list(row)
    for index, field_converters in converters:
        value = values[index]
        for converter, expression in field_converters:
            value = converter(value, expression, connection)
        values[index] = value
    return model.from_db(using, _attnames(model), values)


@cache
def _attnames(model: type[Model]) -> list[str]:
    return [field.attname for field in model._meta.concrete_fields]


@cache
def _converters(model: type[Model], using: str) -> list[tuple[int, list]]:
    connection = connections[using]
    found = []
    for index, field in enumerate(model._meta.concrete_fields):
        col = field.get_col(model._meta.db_table)
        pairs = [
            (converter, col)
            for converter in connection.ops.get_db_converters(col)
            + col.get_db_converters(connection)
        ]
        if pairs:
            found.append((index, pairs))
    return found


def insert_from(
    model: type[Model], values: dict[str, Any], *, expressions: dict[str, str] | None = None
) -> tuple[str, str, list[Any]]:
    """The column list, select list and parameters that insert a `model` row of `values`.

    `values` maps attnames to values; a column it leaves out gets its field's
    default. Every column but the primary key is prepared as `save()`
    prepares it (plain strings, numbers, None and aware datetimes need no
    preparing). `expressions` puts SQL in place of a
    column's value (e.g. `r.id` from a joined row), so a hot INSERT … SELECT
    can look up and insert at once, without building a model instance first.
    """
    expressions = expressions or {}
    names, selects, params = [], [], []
    for field, is_json in _insert_fields(model):
        names.append(f'"{field.column}"')
        if field.attname in expressions:
            selects.append(expressions[field.attname])
            continue
        selects.append("%s")
        value = values[field.attname] if field.attname in values else field.get_default()
        params.append(db_value(field, value, is_json=is_json))
    return ", ".join(names), ", ".join(selects), params


def db_value(field: Any, value: Any, *, is_json: bool | None = None):
    """`value` as a parameter for `field`'s column, as `save()` prepares it.

    Plain strings, numbers, None and aware datetimes (bound as timestamptz,
    the one datetime binding of every store) go as they are; JSON is always
    encoded (a str is a JSON string, not JSON text).
    """
    if is_json is None:
        is_json = isinstance(field, JSONField)
    if not is_json and (
        value is None
        or type(value) in (str, int, bool)
        or (isinstance(value, datetime) and value.tzinfo is not None)
    ):
        return value
    return field.get_db_prep_save(value, connections[DEFAULT_DB_ALIAS])


@cache
def _insert_fields(model: type[Model]) -> list[tuple[Any, bool]]:
    """(field, is JSON) of every column but the key and generated ones (PostgreSQL computes
    those); a JSON value is always prepared."""
    return [
        (field, isinstance(field, JSONField))
        for field in model._meta.concrete_fields
        if not field.primary_key and not getattr(field, "generated", False)
    ]


def known(model: type[M], pk: int, **fields: Any) -> M:
    """An instance of `model` with only `pk` and `fields` known; any other field loads on use.

    For a related object whose id and public id a hot statement already has
    (a checkpoint's task, an effect's run), so serializing them costs no query.
    """
    values = {model._meta.pk.attname: pk, **fields}
    names = [f.attname for f in model._meta.concrete_fields if f.attname in values]
    return model.from_db(DEFAULT_DB_ALIAS, names, [values[name] for name in names])
