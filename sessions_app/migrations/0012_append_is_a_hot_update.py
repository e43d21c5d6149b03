"""An append's UPDATE of its session becomes a HOT update (issue 40).

PostgreSQL updates a row "HOT" (a new version on the same page, no new entry
in any index) only when no indexed value changes; a column in a partial
index's predicate counts. Every append moved `last_seq` (in the predicate of
`session_unindexed_idx`) and `lease_until` (in `session_status_lease_idx`),
so each append wrote a new entry into all nine indexes of the session row.

- The indexer's work list is now the flag `search_pending`, set by the append
  (a flag already set is no change) and cleared by the indexer once
  `indexed_seq` reaches `last_seq`, in the same UPDATE, which sees the newest
  committed `last_seq` (an append racing the batch holds the row; the UPDATE
  waits and re-reads it), so a flag is never cleared over an unindexed item.
- `lease_until` is not indexed: the lease sweep walks the tenant's live
  sessions by `session_status_id_idx` and tests the lease on each.

Nothing here blocks reads or writes for longer than a catalog change: the
column has a constant default (no rewrite), the indexes are built and dropped
CONCURRENTLY (`atomic = False`: each statement its own transaction), and the
flags are set tenant by tenant (the forced policies bind the owner too).
"""

from django.contrib.postgres.operations import AddIndexConcurrently, RemoveIndexConcurrently
from django.db import migrations, models

FILL = """
DO $fill$
DECLARE
    t bigint;
BEGIN
    FOR t IN SELECT id FROM tenancy_app_tenant ORDER BY id LOOP
        PERFORM set_config('app.tenant_id', t::text, true);
        UPDATE sessions_app_session SET search_pending = true
        WHERE tenant_id = t AND last_seq > indexed_seq AND NOT search_pending;
    END LOOP;
    PERFORM set_config('app.tenant_id', '', true);
END
$fill$;
"""

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"


def indexer(pending: str, mark: str) -> str:
    """`stateroom_index_pending` (migrations 0010, 0011) with the work list `pending` and the
    session's marks set by `mark`."""
    return f"""
CREATE OR REPLACE FUNCTION stateroom_index_pending(max_sessions integer, max_items integer)
RETURNS TABLE (sessions integer, items integer)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
DECLARE
    t bigint := {TENANT};
BEGIN
    IF t IS NULL OR NOT pg_try_advisory_xact_lock(hashtext('stateroom_index_pending'), t::integer)
    THEN
        RETURN QUERY SELECT 0, 0;
        RETURN;
    END IF;
    RETURN QUERY
    WITH todo AS (
        SELECT s.id, s.indexed_seq AS done, LEAST(s.last_seq, s.indexed_seq + max_items) AS upto
        FROM sessions_app_session s
        WHERE s.tenant_id = t AND {pending} AND s.content_fenced_at IS NULL
        ORDER BY s.id LIMIT max_sessions
    ), src AS (
        SELECT i.id, i.tenant_id, stateroom_item_search(i.payload) AS search
        FROM todo JOIN sessions_app_sessionitem i ON i.tenant_id = t AND i.session_id = todo.id
            AND i.seq > todo.done AND i.seq <= todo.upto
        FOR SHARE OF i
    ), ins AS (
        INSERT INTO sessions_app_itemsearch (item_id, tenant_id, search)
        SELECT src.id, src.tenant_id, src.search FROM src WHERE src.search IS NOT NULL
        ON CONFLICT (item_id, tenant_id) DO UPDATE SET search = EXCLUDED.search
        RETURNING 1
    ), marked AS (
        UPDATE sessions_app_session s SET {mark}
        FROM todo WHERE s.tenant_id = t AND s.id = todo.id
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM marked)::integer, (SELECT count(*) FROM src)::integer;
END
$$;
"""


# `s.last_seq` in the UPDATE is the row's newest committed value (READ COMMITTED
# re-reads a row it waited for): an append committed after `todo` keeps the flag.
INDEXER = indexer(
    "s.search_pending",
    "indexed_seq = GREATEST(s.indexed_seq, todo.upto),"
    " search_pending = s.last_seq > GREATEST(s.indexed_seq, todo.upto)",
)
OLD_INDEXER = indexer(
    "s.last_seq > s.indexed_seq", "indexed_seq = GREATEST(s.indexed_seq, todo.upto)"
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0011_tenant_keys_items"),
        ("tenancy_app", "0010_tenant_keys"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="search_pending",
            field=models.BooleanField(db_default=False, default=False),
        ),
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        AddIndexConcurrently(
            model_name="session",
            index=models.Index(
                condition=models.Q(("content_fenced_at__isnull", True), ("search_pending", True)),
                fields=["tenant", "id"],
                name="session_search_pending_idx",
            ),
        ),
        migrations.RunSQL(INDEXER, OLD_INDEXER),
        RemoveIndexConcurrently(model_name="session", name="session_unindexed_idx"),
        RemoveIndexConcurrently(model_name="session", name="session_status_lease_idx"),
    ]
