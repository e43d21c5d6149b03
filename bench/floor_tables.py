"""The floor's own tables: Stateroom's columns, nothing else the schema adds.

The same-guarantee floor (`raw_floor.RawFloor`) must not pay for what
Stateroom's schema adds, or it measures the store's Python instead of the
store's design (issue 40). So it runs on tables of its own, in the schema
`floor` of the bench database:

- the same columns as Stateroom's tables (`LIKE … INCLUDING DEFAULTS
  INCLUDING IDENTITY`), and the same rows (copied tenant by tenant from the
  data set, as the app role, so the tables and indexes have the same size);
- only the indexes the guarantees need: the primary key, the unique keys that
  make seqs gap-free and idempotency keys single, and the one index each read
  walks (`INDEXES`);
- no triggers, no foreign keys, no search, no generated columns;
- forced row-level security with the same tenant policy as Stateroom's tables,
  read and written by the same app role (NOSUPERUSER NOBYPASSRLS).

Everything Stateroom's schema adds beyond this counts against Stateroom.
Built once per data set (`ensure`); a bench run with `--reuse` keeps them while their
columns are still Stateroom's (after a migration that changed those, it builds them anew).
"""

from __future__ import annotations

import psycopg

from .database import TENANT_SETTING, connect
from .generate import tables

SCHEMA = "floor"
TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"

# The tables the floor's operations touch, by the names `generate.tables()` uses.
TABLES = (
    "session",
    "item",
    "item_append",
    "run",
    "run_transition",
    "task",
    "checkpoint",
    "approval",
    "effect",
)

# Beyond each primary key: what the guarantees and the reads need, and nothing more.
INDEXES = {
    "session": ["UNIQUE (tenant_id, session_id)"],
    "item": ["UNIQUE (tenant_id, session_id, seq)"],  # gap-free seqs; the last-50 read
    "item_append": ["UNIQUE (tenant_id, session_id, idempotency_key)"],
    "run": ["UNIQUE (tenant_id, run_id)"],
    "run_transition": [],
    "task": ["UNIQUE (tenant_id, task_id)"],
    "checkpoint": ["UNIQUE (tenant_id, task_id, seq)"],  # latest, history
    "approval": ["INDEX (tenant_id, status, id)"],  # the pending page
    "effect": ["UNIQUE (tenant_id, idempotency_key)"],
}

# Columns Stateroom's schema computes that the floor does not have.
DROPPED = {"item": ["search"], "approval": ["search"]}


def names() -> dict[str, str]:
    """The floor's table for each name of `generate.tables()`."""
    return {name: f"{SCHEMA}.{name}" for name in TABLES}


def prepare(url: str, log) -> None:
    """The floor's tables for the bench database at `url`, built if missing."""
    from tenancy_app.models import Tenant

    from .database import bench_database

    tenant_pks = list(Tenant.objects.order_by("pk").values_list("pk", flat=True))
    ensure(url, bench_database().owner_url, tenant_pks, log)


def ensure(url: str, owner_url: str, tenant_pks: list[int], log) -> None:
    """Create and fill the floor's tables unless this data set already has them, with the
    columns Stateroom's tables have now (after a migration, `--reuse` builds them anew)."""
    with connect(owner_url) as owner:
        if _built(owner):
            return
        log("  building the floor's own tables (schema floor) from the data set")
        _create(owner, _app_role(url))
    with connect(url) as app:
        _copy(app, tenant_pks)
    with connect(owner_url) as owner:
        _finish(owner)


def _built(owner: psycopg.Connection) -> bool:
    """Whether every floor table is there with its Stateroom table's columns and types (in
    order, less `DROPPED`): what a data set reused after a migration may no longer have."""
    source = tables()
    for name in TABLES:
        built = _column_types(owner, SCHEMA, name)
        dropped = DROPPED.get(name, [])
        now = [c for c in _column_types(owner, None, source[name]) if c[0] not in dropped]
        if not built or built != now:
            return False
    return True


def _column_types(conn: psycopg.Connection, schema: str | None, table: str) -> list[tuple]:
    """A table's (column, type) in order; `schema` None: the connection's current schema."""
    return conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = coalesce(%s, current_schema()) AND table_name = %s"
        " ORDER BY ordinal_position",
        [schema, table],
    ).fetchall()


def _app_role(url: str) -> str:
    with connect(url) as conn:
        return conn.execute("SELECT current_user").fetchone()[0]


def _create(owner: psycopg.Connection, app_role: str) -> None:
    source = tables()
    owner.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
    owner.execute(f"CREATE SCHEMA {SCHEMA}")
    owner.execute(f'GRANT USAGE ON SCHEMA {SCHEMA} TO "{app_role}"')
    for name in TABLES:
        table = f"{SCHEMA}.{name}"
        owner.execute(
            f"CREATE TABLE {table} (LIKE {source[name]} INCLUDING DEFAULTS INCLUDING IDENTITY)"
        )
        for column in DROPPED.get(name, []):
            owner.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS {column}")
        owner.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (id)")
        owner.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        owner.execute(
            f"CREATE POLICY tenant_isolation ON {table}"
            f" USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT})"
        )
        owner.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO "{app_role}"')
    owner.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA {SCHEMA} TO "{app_role}"')


def _copy(app: psycopg.Connection, tenant_pks: list[int]) -> None:
    """The data set's rows, tenant by tenant under the tenant policy, as the app does."""
    source = tables()
    columns = {name: _columns(app, name) for name in TABLES}
    for tenant_pk in tenant_pks:
        with app.transaction():
            app.execute("SELECT set_config(%s, %s, true)", [TENANT_SETTING, str(tenant_pk)])
            for name in TABLES:
                cols = ", ".join(columns[name])
                app.execute(
                    f"INSERT INTO {SCHEMA}.{name} ({cols}) OVERRIDING SYSTEM VALUE"
                    f" SELECT {cols} FROM {source[name]} WHERE tenant_id = %s",
                    [tenant_pk],
                )


def _columns(conn: psycopg.Connection, name: str) -> list[str]:
    rows = conn.execute(
        "SELECT column_name FROM information_schema.columns"
        " WHERE table_schema = %s AND table_name = %s ORDER BY ordinal_position",
        [SCHEMA, name],
    ).fetchall()
    return [row[0] for row in rows]


def _finish(owner: psycopg.Connection) -> None:
    """Indexes after the copy (as a loader would), sequences past the copied ids, RLS forced."""
    for name in TABLES:
        table = f"{SCHEMA}.{name}"
        for n, index in enumerate(INDEXES[name]):
            kind, cols = index.split(" ", 1)
            unique = "UNIQUE " if kind == "UNIQUE" else ""
            owner.execute(f"CREATE {unique}INDEX {name}_floor_{n} ON {table} {cols}")
        owner.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"
            f" (SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"
        )
        owner.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
        owner.execute(f"ANALYZE {table}")
