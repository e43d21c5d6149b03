"""Hot-path SQL: statements PostgreSQL parses and plans once per connection.

Django's psycopg 3 cursors bind parameters on the client, so the server
parses and plans every statement anew. The few statements on the hot path of
every agent step (append items, compare-and-set, checkpoints, effects) run
through `hot_cursor()` instead: a psycopg cursor binding on the server, whose
statements psycopg prepares after `DB_PREPARE_THRESHOLD` runs. It is still
Django's connection and transaction, wrapped like Django's own cursors, so
query logging, `CaptureQueriesContext` and execute wrappers see it.

**Why not Django's `OPTIONS={"server_side_binding": True}`.** Measured side
by side inside a tenant transaction (bench/README.md, "server_side_binding vs
hot_cursor"; `python -m bench --only binding`): the reads of many rows are
1.5-2x faster here (read last 50 items, pending approvals), nearly all of it
psycopg's C timestamptz loader in place of Django's Python one
(`_raw_cursor`); the writes are at parity within the noise. Django's option
would also bind every ORM query of the connection on the server, which the
table does not cover. So `hot_cursor()` keeps its own cursor and loader, and
nothing else: a plain psycopg `Cursor` per statement, wrapped by
`connection.make_cursor` (or `_LoggedHotCursor` while queries are logged, so
the log shows values, not `$1`). It no longer keeps one cursor per
connection (measured no faster than one per statement) nor uses Django's
internal `ServerBindingCursor` (psycopg's `Cursor` plus `callproc`).
On a connection configured with `server_side_binding` (the bench's other
side) it yields Django's own `connection.cursor()`.

Hot statements name their columns (no `*`): a prepared statement must keep
its result shape. They bypass the
django-scopes manager, so each filters on `tenant_id` itself, as every store
query does; PostgreSQL's row-level security applies beneath them as it does
beneath the ORM (the tenant transaction's `app.tenant_id`).

**One round trip per hot operation.** Inside a tenant transaction (a
request's, a job's `in_tenant(tenant)`) a hot statement is one more
statement of that transaction. Outside any transaction (`in_tenant(tenant,
atomic=False)`: the runtime API's hot endpoints, workers that opt in) a hot
statement (`hot_cursor(alone=True)`) is pipelined with the tenant setting
(libpq's pipeline mode on the autocommit connection, driven through psycopg's
own adapters and wait loop: `_Pipeline`), one Sync for both:

    SELECT set_config('app.tenant_id', $1, true),  -- the scope's tenant
           set_config('plan_cache_mode', 'force_generic_plan', true)
    <the statement>                                 -- bound on the server
    Sync

PostgreSQL runs everything before a Sync in one implicit transaction: the
tenant setting is transaction-local (`true`), so the policy sees this
operation's tenant and no other, the statement commits with it, and nothing
outlives the round trip — also behind a pooler in transaction mode, which
keeps one server connection until the transaction ends. Both statements are
bound on the server and prepared after `DB_PREPARE_THRESHOLD` runs, as
psycopg prepares those of `hot_cursor()` inside a transaction (set
`DB_PREPARE_THRESHOLD=0` behind a pooler that cannot keep prepared
statements; one the server lost is prepared again on a new connection).

**A guard rides with the tenant setting.** `guard_tenant_statements(expr,
params)` makes the connection's next tenant setting also evaluate `expr`: as
one more column of `tenant_block`'s `set_config` statement, or as one more
statement of the message, between the setting and the statement (a refusal
there makes PostgreSQL skip the statement). A guard refuses by raising
`GUARD_SQLSTATE`, seen here as `GuardRefused`. The request's check of a
bearer token the process already knows rides this way (tenancy_app.auth), so
it costs no round trip of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper
from django.db.models import JSONField, Model
from django_scopes import get_scope
from django_scopes.exceptions import ScopeError

__all__ = [
    "GUARD_SQLSTATE",
    "TENANT_SETTING",
    "GuardRefused",
    "check_pending_guard",
    "columns",
    "current_tenant",
    "db_value",
    "guard_tenant_statements",
    "hot_cursor",
    "insert_from",
    "known",
    "model_from_row",
    "scope_tenant",
    "scope_tenant_block",
    "tenant_block",
]

# The PostgreSQL setting the row-level security policies read (tenancy_app.rls).
TENANT_SETTING = "app.tenant_id"
_TENANT_ATTR = "_stateroom_tenant_stack"
_GUARD_ATTR = "_stateroom_guard"
# The SQLSTATE a guard raises when it refuses (tenancy_app's `tenancy_token_live`).
GUARD_SQLSTATE = "SR401"


class GuardRefused(Exception):
    """The connection's guard (`guard_tenant_statements`) refused in PostgreSQL: the
    statement that carried it, and what was sent after it, did not run.

    Not a `DatabaseError`, so that no handler of database errors takes it for one.
    """


M = TypeVar("M", bound=Model)


@contextmanager
def hot_cursor(
    using: str = DEFAULT_DB_ALIAS, *, tenant_owned: bool = True, alone: bool = False
) -> Iterator[Any]:
    """The hot-path cursor; for tenant-owned tables only inside a tenant scope.

    Like django-scopes' manager, it raises ScopeError outside `in_tenant` (or
    the request's scope) unless scopes are disabled: on PostgreSQL, RLS would
    answer such a statement with nothing. `tenant_owned=False` is for the
    statements that come before a tenant is known (token lookup, the tenant
    setting itself).

    `alone=True`: ONE statement that is complete on its own. Inside a tenant
    transaction it is one statement of it; outside any transaction the
    scope's tenant setting and the statement go as one message (module
    docstring); inside a transaction of no tenant, in a `tenant_block` of the
    scope's tenant. The tenant is always the scope's (the request's, the
    job's), never the caller's idea of it: a store built for another tenant
    still meets the policy of this one.
    """
    if tenant_owned:
        _require_tenant_scope()
    connection = connections[using]
    if alone and current_tenant(using) is None:
        tenant = scope_tenant()
        if tenant is not None:
            if not connection.in_atomic_block:
                _ready(connection)
                message = _TenantMessage(connection, tenant)
                try:
                    yield message
                finally:
                    message.close()
                return
            with tenant_block(tenant, using), hot_cursor(using, tenant_owned=tenant_owned) as cur:
                yield cur
            return
    _ready(connection)
    if connection.features.uses_server_side_binding:
        # Django's documented path (OPTIONS={"server_side_binding": True}); the
        # bench's `--only binding` section measures it beside the cursor below.
        with connection.cursor() as cursor:
            yield cursor
        return
    raw = _raw_cursor(connection)
    try:
        if connection.queries_logged:
            yield _LoggedHotCursor(raw, connection)
        else:
            yield connection.make_cursor(raw)
    finally:
        raw.close()


def scope_tenant() -> int | None:
    """The pk of the tenant of the current django-scopes scope, if any."""
    tenant = get_scope().get("tenant")
    return getattr(tenant, "pk", tenant)


@contextmanager
def guard_tenant_statements(
    expression: str, params: Sequence[Any], using: str = DEFAULT_DB_ALIAS
) -> Iterator[Callable[[], bool]]:
    """The connection's next tenant setting also evaluates `expression`, in the same statement
    (`tenant_block`) or the same message (`hot_cursor(alone=True)`): no round trip of its own.

    `expression` (SQL with `%s` for `params`) raises `GUARD_SQLSTATE` to refuse; then the
    statement or message that carried it does nothing and `GuardRefused` is raised. Once a
    tenant setting that carried it has run, the guard is spent. Yields `pending()`: True
    while no tenant statement has carried it (the caller checks then by itself). What a
    request's cached bearer token rides on (tenancy_app.auth).
    """
    connection = connections[using]
    setattr(connection, _GUARD_ATTR, (expression, list(params)))

    def pending() -> bool:
        return getattr(connection, _GUARD_ATTR, None) is not None

    try:
        yield pending
    finally:
        setattr(connection, _GUARD_ATTR, None)


def check_pending_guard(using: str = DEFAULT_DB_ALIAS) -> None:
    """Run the connection's guard on its own, if no tenant statement has carried it: for
    a caller that sent none (`GuardRefused` if it refuses). Spent either way."""
    connection = connections[using]
    guard = _guard(connection)
    if guard is None:
        return
    _run_guarded(using, f"SELECT {guard[0]}", guard[1], guard)
    _spend_guard(connection)


def _guard(connection: Any) -> tuple[str, list[Any]] | None:
    return getattr(connection, _GUARD_ATTR, None)


def _spend_guard(connection: Any) -> None:
    setattr(connection, _GUARD_ATTR, None)


def _refused(exc: BaseException) -> bool:
    """A database error raised by a guard."""
    cause = exc.__cause__ if isinstance(exc, DatabaseError) else exc
    return getattr(cause, "sqlstate", None) == GUARD_SQLSTATE


@contextmanager
def scope_tenant_block(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """Nothing inside a tenant transaction; else a `tenant_block` of the scope's tenant."""
    tenant = scope_tenant()
    if current_tenant(using) is not None or tenant is None:
        yield
    else:
        with tenant_block(tenant, using):
            yield


def _ready(connection: Any) -> None:
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()


def current_tenant(using: str = DEFAULT_DB_ALIAS) -> int | None:
    """The tenant whose `tenant_block` the connection is in now, or None."""
    connection = connections[using]
    stack = getattr(connection, _TENANT_ATTR, None)
    if not stack or not connection.in_atomic_block:
        return None
    return stack[-1]


@contextmanager
def tenant_block(tenant_id: int, using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """A transaction (or savepoint) in which RLS sees only `tenant_id`'s rows.

    The setting is transaction-local (`set_config(..., true)`), so it cannot
    leak to the next user of a pooled connection. When nested inside another
    tenant's block, the outer tenant is restored on exit; nested inside the
    same tenant's block it is a plain savepoint.
    """
    connection = transaction.get_connection(using)
    nested = connection.in_atomic_block
    outer = current_tenant(using)
    stack = getattr(connection, _TENANT_ATTR, None)
    if stack is None or not nested:
        stack = []
        setattr(connection, _TENANT_ATTR, stack)
    with transaction.atomic(using=using):
        if outer != tenant_id:
            _set_tenant(connection, using, tenant_id)
        stack.append(tenant_id)
        try:
            yield
        finally:
            stack.pop()
        # After a failure marked for rollback (an API error), the savepoint's
        # rollback restores the setting itself; no query may run before it.
        if nested and outer != tenant_id and not connection.needs_rollback:
            with hot_cursor(using, tenant_owned=False) as cursor:
                cursor.execute(
                    "SELECT set_config(%s, %s, true)",
                    [TENANT_SETTING, "" if outer is None else str(outer)],
                )


def _set_tenant(connection: Any, using: str, tenant_id: int) -> None:
    """The transaction's tenant setting, with the connection's guard if one is pending."""
    guard = _guard(connection)
    sql, params = "SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(tenant_id)]
    if guard is not None:
        sql, params = f"{sql}, {guard[0]}", [*params, *guard[1]]
    _run_guarded(using, sql, params, guard)
    if guard is not None:
        _spend_guard(connection)


def _run_guarded(using: str, sql: str, params: Sequence[Any], guard: Any) -> None:
    """One statement outside the tenant's tables; a refusing guard in it is `GuardRefused`."""
    with hot_cursor(using, tenant_owned=False) as cursor:
        try:
            cursor.execute(sql, params)
        except DatabaseError as exc:
            if guard is not None and _refused(exc):
                raise GuardRefused(str(exc.__cause__ or exc)) from exc
            raise


# The tenant, and generic plans for this message's prepared statement: a hot statement is
# planned once per connection (the module docstring). Left to PostgreSQL's own choice
# (`plan_cache_mode = auto`), a statement whose custom plans look cheaper than the generic
# one is planned anew on every call; the pending page was, 0.3 ms a call, depending on
# the data (bench/README.md, "Found on 2026-12-07"). Transaction-local, as the tenant.
_SET_TENANT = (
    f"SELECT set_config('{TENANT_SETTING}', %s, true),"
    " set_config('plan_cache_mode', 'force_generic_plan', true)"
)
# Called with each pipelined statement's SQL before it is sent: the pipelined path
# (`_TenantMessage`) bypasses Django's `execute_wrappers`, so a check that must see
# every statement (the test suite's ownership check) registers here as well.
PIPELINED_STATEMENT_CHECKS: list[Callable[[str], None]] = []
# Statement shapes one connection prepares (the hot ones are a few dozen); more run unprepared.
_PREPARED_MAX = 200
# Tenant settings one connection keeps converted (the bind parameters of `_SET_TENANT`).
_SETTINGS_MAX = 1000


class _TenantMessage:
    """A cursor for one tenant statement outside a transaction: one round trip.

    `execute(sql, params)` pipelines the tenant setting and the statement
    (module docstring, `_Pipeline`) and keeps the statement's rows to fetch.
    """

    def __init__(self, connection: Any, tenant_id: int) -> None:
        self.db = connection
        self.tenant_id = str(int(tenant_id))
        self.rows: list[Any] = []
        self.rowcount = -1

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        from psycopg import errors

        for check in PIPELINED_STATEMENT_CHECKS:
            check(sql)
        try:
            self._send(sql, params)
        except DatabaseError as exc:
            # The server lost the connection's prepared statements (a pooler's reset)
            # or a plan went stale (a migration changed a table). Outside any
            # transaction nothing is lost with the connection: a new one prepares
            # them again. Once.
            lost = (errors.InvalidSqlStatementName, errors.FeatureNotSupported)
            if not isinstance(exc.__cause__, lost):
                raise
            self.db.close()
            _ready(self.db)
            self._send(sql, params)

    def _send(self, sql: str, params: Sequence[Any]) -> None:
        pipeline = _Pipeline.of(self.db)
        guard = _guard(self.db)
        if self.db.queries_logged:
            parts = [_SET_TENANT % repr(self.tenant_id)]
            if guard is not None:
                parts.append(self.db.ops.compose_sql(f"SELECT {guard[0]}", guard[1]))
            logged = "; ".join([*parts, self.db.ops.compose_sql(sql, params)])
            with CursorDebugWrapper(None, self.db).debug_sql(logged):
                self.rows, self.rowcount = pipeline.run(self.tenant_id, sql, params, guard)
        else:
            self.rows, self.rowcount = pipeline.run(self.tenant_id, sql, params, guard)
        if guard is not None:
            _spend_guard(self.db)

    def fetchone(self) -> Any:
        return self.rows.pop(0) if self.rows else None

    def fetchall(self) -> list[Any]:
        rows, self.rows = self.rows, []
        return rows

    def close(self) -> None:
        self.rows = []


class _Pipeline:
    """One connection's tenant messages, sent through libpq's pipeline mode directly.

    psycopg's own `Connection.pipeline()` does the same with more machinery
    (its queue of cursors and results): measured on one connection, a tenant
    message cost 450 us of CPU through it and 170 us here, as much as one plain
    statement (bench/README.md). What psycopg does per statement is kept: its
    adapters convert the parameters and load the rows (with the C timestamptz
    loader, as `_raw_cursor`), and a statement is prepared on the server once
    it has run `prepare_threshold` times (None: never; at most `_PREPARED_MAX`
    shapes). A server error is raised as psycopg raises it (Django's wrapper
    turns it into Django's error), after the pipeline is read to its Sync.
    """

    def __init__(self, db: Any) -> None:
        from psycopg.adapt import AdaptersMap, Transformer
        from psycopg.types.datetime import TimestamptzLoader

        self.db = db
        self.connection = db.connection  # with `adapters`: psycopg's adaptation context
        self.adapters = AdaptersMap(self.connection.adapters)
        self.adapters.register_loader("timestamptz", TimestamptzLoader)
        self.transformer = Transformer(self)
        self.prepared: dict[Any, bytes] = {}  # (statement, types) -> its name on the server
        self.settings: dict[str, Any] = {}  # tenant id -> its tenant setting, converted once
        self.runs: dict[Any, int] = {}  # (statement, types) -> times run unprepared
        self.named = 0

    @classmethod
    def of(cls, db: Any) -> _Pipeline:
        pipeline = getattr(db, "_stateroom_pipeline", None)
        if pipeline is None or pipeline.connection is not db.connection:
            pipeline = db._stateroom_pipeline = cls(db)
        return pipeline

    def run(
        self,
        tenant_id: str,
        sql: str,
        params: Sequence[Any],
        guard: tuple[str, list[Any]] | None = None,
    ) -> tuple[list[Any], int]:
        """Send the tenant setting (and the guard) and the statement with one Sync; the
        statement's rows and rowcount. A refusing guard raises `GuardRefused`."""
        from psycopg._queries import PostgresQuery

        setting = self.settings.get(tenant_id)
        if setting is None:
            if len(self.settings) >= _SETTINGS_MAX:
                self.settings.clear()
            setting = self.settings[tenant_id] = PostgresQuery(self.transformer)
            setting.convert(_SET_TENANT, [tenant_id])
        queries = [setting]
        if guard is not None:
            check = PostgresQuery(self.transformer)
            check.convert(f"SELECT {guard[0]}", guard[1])
            queries.append(check)
        statement = PostgresQuery(self.transformer)
        statement.convert(sql, params)
        queries.append(statement)
        with self.db.wrap_database_errors, self.connection.lock:
            results = self._exchange(queries)
        error = next((r for r in results if r.status == _FATAL_ERROR), None)
        if error is not None:
            from psycopg import errors

            exc = errors.error_from_result(error, encoding=self.connection.info.encoding)
            if guard is not None and _refused(exc):
                raise GuardRefused(str(exc))
            with self.db.wrap_database_errors:
                raise exc
        result = results[-1]
        self.transformer.set_pgresult(result)
        rows = self.transformer.load_rows(0, result.ntuples, tuple) if result.ntuples else []
        self.transformer.set_pgresult(None)
        tuples = result.command_tuples
        return rows, -1 if tuples is None else tuples

    def _exchange(self, queries: list[Any]) -> list[Any]:
        """Each query's results in order (a `send_prepare` gives one more), then the Sync."""
        from psycopg.generators import execute, fetch_many

        pgconn = self.connection.pgconn
        wait = self.connection.wait
        preparing: list[tuple[int, Any, bytes]] = []  # (its result's index, statement, name)
        sent = 0
        pgconn.enter_pipeline_mode()
        try:
            for query in queries:
                # As psycopg's own cache: a statement is prepared for its parameter types.
                key = (query.query, query.types)
                name = self.prepared.get(key)
                if name is None and self._prepare_now(key):
                    self.named += 1
                    name = f"stateroom_{self.named}".encode()
                    pgconn.send_prepare(name, query.query, param_types=query.types)
                    preparing.append((sent, key, name))
                    sent += 1
                if name is None:
                    pgconn.send_query_params(
                        query.query,
                        query.params,
                        param_types=query.types,
                        param_formats=query.formats,
                    )
                else:
                    pgconn.send_query_prepared(name, query.params, param_formats=query.formats)
                sent += 1
            pgconn.pipeline_sync()
            results = [wait(execute(pgconn))[0]]  # flush, and the first statement's result
            results += [wait(fetch_many(pgconn))[0] for _ in range(sent - 1)]
            (sync,) = wait(fetch_many(pgconn))
            assert sync.status == _PIPELINE_SYNC, sync.status
        except BaseException:
            self.db.close()  # results may be left unread: this connection is done
            raise
        pgconn.exit_pipeline_mode()
        for index, key, name in preparing:  # prepared, whatever became of the statement
            if results[index].status == _COMMAND_OK:
                self.prepared[key] = name
        if not preparing:
            return results
        return [r for i, r in enumerate(results) if i not in {p[0] for p in preparing}]

    def _prepare_now(self, key: Any) -> bool:
        threshold = self.connection.prepare_threshold
        if threshold is None or len(self.prepared) >= _PREPARED_MAX:
            return False
        runs = self.runs[key] = self.runs.get(key, 0) + 1
        return runs > threshold


_COMMAND_OK = 1  # psycopg.pq.ExecStatus.COMMAND_OK
_FATAL_ERROR = 7  # psycopg.pq.ExecStatus.FATAL_ERROR
_PIPELINE_SYNC = 10  # psycopg.pq.ExecStatus.PIPELINE_SYNC


def _require_tenant_scope() -> None:
    current = get_scope()
    if current.get("_enabled", True) and "tenant" not in current:
        raise ScopeError(
            "A hot statement on tenant-owned tables ran outside a tenant scope;"
            " enter in_tenant(tenant) first."
        )


def _raw_cursor(connection: Any) -> Any:
    """A server-binding psycopg cursor on the connection, reading timestamptz with psycopg's C loader.

    psycopg's own `Cursor` (Django's `ServerBindingCursor` is that plus
    `callproc`), made anew for each statement: keeping one per connection
    measured no faster (bench/README.md, "server_side_binding vs hot_cursor").
    The loader is psycopg's own (C) timestamptz loader, not Django's Python
    subclass of it: the same aware UTC datetimes (the session time zone is
    UTC), and the reason the reads of many rows beat Django's
    server_side_binding by 1.5-2x in that table.
    """
    from psycopg import Cursor
    from psycopg.types.datetime import TimestamptzLoader

    with connection.wrap_database_errors:
        raw = Cursor(connection.connection)
    raw.adapters.register_loader("timestamptz", TimestamptzLoader)
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
