"""Migration operations that put `tenant_id` into every key, on a populated database.

Citus distributes a table by one column (ours: `tenant_id`) and accepts a
primary key, unique constraint or foreign key between distributed tables only
when it includes that column (docs/scaling.md). Django keeps `id` as each
model's primary key (its ORM, admin, forms and foreign keys need one column);
in the database the primary key becomes `(tenant_id, id)` and foreign keys
become `(tenant_id, x_id) REFERENCES parent (tenant_id, id)`. Django never
reads the primary key constraint back, and `id` stays unique by its identity
sequence (docs/architecture.md, "Every key carries the tenant").

None of these holds a lock that blocks reads or writes for longer than a
catalog change:

- `tenant_pk_index`: `CREATE UNIQUE INDEX CONCURRENTLY (tenant_id, id)`:
  no lock that blocks writes (SHARE UPDATE EXCLUSIVE) while it builds;
- `tenant_foreign_key`: the composite foreign key `NOT VALID` (a catalog
  change), then `VALIDATE CONSTRAINT` in its own transaction, which scans
  under SHARE UPDATE EXCLUSIVE: reads and writes go on;
- `tenant_primary_key`: one `ALTER TABLE` that drops the old primary key and
  adopts the index already built (`PRIMARY KEY USING INDEX`): no scan, no
  build; `tenant_id` is already NOT NULL;
- `tenant_unique`: the new unique index built concurrently, then one
  `ALTER TABLE` that swaps the constraints.

The migrations that use them are `atomic = False` (CONCURRENTLY cannot run in
a transaction): each statement commits on its own, and every statement here is
idempotent (`IF NOT EXISTS`, a check of the catalog), so a migration stopped
half way runs again. A concurrent build that failed leaves an INVALID index:
`DROP INDEX CONCURRENTLY` it and migrate again.
"""

from __future__ import annotations

from django.db import migrations

# Short waits: a DDL statement that queues behind a long transaction would make every
# later query of the table queue behind it. Better to fail and run the migration again.
LOCK_TIMEOUT = "SET lock_timeout = '5s'"


def pk_index_name(table: str) -> str:
    return f"{table}_tenant_pk"[:63]


def tenant_pk_index(table: str) -> migrations.RunSQL:
    """The unique `(tenant_id, id)` index that foreign keys reference, later the primary key."""
    name = pk_index_name(table)
    return migrations.RunSQL(
        f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} (tenant_id, id)",
        f"DROP INDEX CONCURRENTLY IF EXISTS {name}",
        elidable=False,
    )


def tenant_foreign_key(table: str, column: str, parent: str) -> list[migrations.RunSQL]:
    """`(tenant_id, column) REFERENCES parent (tenant_id, id)`: added NOT VALID, then validated.

    Deferred like Django's own foreign keys; no ON DELETE action (Django's `on_delete`
    runs in Python, as before). The model's field is `db_constraint=False` (Django no
    longer keeps a one-column constraint of its own)."""
    name = f"{table}_{column}_tenant_fk"[:63]
    add = f"""
    DO $$ BEGIN
      IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '{name}'
                     AND conrelid = '{table}'::regclass) THEN
        {LOCK_TIMEOUT};
        ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (tenant_id, {column})
          REFERENCES {parent} (tenant_id, id) DEFERRABLE INITIALLY DEFERRED NOT VALID;
      END IF;
    END $$"""
    return [
        migrations.RunSQL(add, f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}"),
        migrations.RunSQL(
            f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}", migrations.RunSQL.noop
        ),
    ]


def tenant_primary_key(table: str) -> migrations.RunSQL:
    """Swap `PRIMARY KEY (id)` for `PRIMARY KEY (tenant_id, id)`, adopting the built index
    (the constraint takes the index's name, `<table>_tenant_pk`).

    Every foreign key that referenced the old primary key must be gone first
    (`tenant_foreign_key` and `db_constraint=False` in the migrations before)."""
    index = pk_index_name(table)
    forward = f"""
    DO $$
    DECLARE old text;
    BEGIN
      SELECT conname INTO old FROM pg_constraint WHERE conrelid = '{table}'::regclass
        AND contype = 'p' AND conname <> '{index}';
      IF old IS NOT NULL THEN
        {LOCK_TIMEOUT};
        EXECUTE format('ALTER TABLE {table} DROP CONSTRAINT %I, '
                       'ADD CONSTRAINT {index} PRIMARY KEY USING INDEX {index}', old);
      END IF;
    END $$"""
    backward = (
        f"ALTER TABLE {table} DROP CONSTRAINT {index}, ADD CONSTRAINT {table[:58]}_pkey"
        f" PRIMARY KEY (id); CREATE UNIQUE INDEX IF NOT EXISTS {index} ON {table} (tenant_id, id)"
    )
    return migrations.RunSQL(forward, backward, elidable=False)


def tenant_unique(
    table: str, name: str, columns: list[str], old_columns: list[str]
) -> list[migrations.RunSQL]:
    """Replace the unique constraint on exactly `old_columns` by `name` UNIQUE (columns),
    `tenant_id` among them: the index `name` built concurrently, then one swap. `name`
    must be new (not the old constraint's), so that a second run finds it and stops."""
    cols = ", ".join(columns)
    old = "ARRAY[" + ", ".join(f"'{c}'" for c in old_columns) + "]::name[]"
    swap = f"""
    DO $$
    DECLARE old text;
    BEGIN
      SELECT c.conname INTO old FROM pg_constraint c WHERE c.conrelid = '{table}'::regclass
        AND c.contype = 'u' AND ARRAY(SELECT attname FROM pg_attribute a
          JOIN unnest(c.conkey) WITH ORDINALITY k(attnum, ord) ON a.attnum = k.attnum
          WHERE a.attrelid = c.conrelid ORDER BY k.ord) = {old};
      {LOCK_TIMEOUT};
      IF old IS NOT NULL THEN
        EXECUTE format('ALTER TABLE {table} DROP CONSTRAINT %I', old);
      END IF;
      IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '{name}'
                     AND conrelid = '{table}'::regclass) THEN
        ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE USING INDEX {name};
      END IF;
    END $$"""
    return [
        migrations.RunSQL(
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} ({cols})",
            f"DROP INDEX CONCURRENTLY IF EXISTS {name}",
        ),
        migrations.RunSQL(swap, migrations.RunSQL.noop),
    ]


class TenantKeyed:
    """A model whose rows are keyed `(tenant_id, id)` in the database (tenancy_app.models).

    Here, not in tenancy_app: the statement is the calling store's (tests/ownership.py and
    tests/tenant_sql.py attribute a statement to the innermost app frame)."""

    def _do_update(self, base_qs, using, pk_val, values, update_fields, forced_update):
        """`save()` updates by primary key; the key in the database is `(tenant_id, id)`, and
        Citus routes an UPDATE by its `tenant_id`: name the row's tenant too (the same hook
        Citus's django-multitenant overrides; docs/architecture.md)."""
        base_qs = base_qs.filter(tenant_id=self.tenant_id)
        return super()._do_update(base_qs, using, pk_val, values, update_fields, forced_update)

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        """A reload, and the first read of a deferred field, by primary key: in the row's
        tenant too, as `_do_update` (the tenant itself loaded, else by id alone)."""
        if from_queryset is None and "tenant_id" in self.__dict__:
            manager = type(self)._base_manager.db_manager(using, hints={"instance": self})
            from_queryset = manager.filter(tenant_id=self.tenant_id)
        super().refresh_from_db(using, fields, from_queryset)
