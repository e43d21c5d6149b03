"""Every key carries the tenant, for the session, its items and their search index (issue 38).

Once no foreign key references `sessions_app_session (id)` any more (runs
0008, lifecycle 0002, sessions 0009 made theirs `(tenant_id, session_id)`;
items and append keys keep none, 0010), the primary keys become
`(tenant_id, id)`: the items' index built CONCURRENTLY, then each key
swapped onto its built index (stateroom/postgres/tenant_keys.py). The search
index's key becomes `(item_id, tenant_id)`: the tenant second, so that a
search's tenant condition is still no reason to walk the key (its GIN index
serves the match, migration 0006), and the functions that write it (0006,
0010) name the tenant in every condition and conflict.
"""

from django.db import migrations

from stateroom.postgres.tenant_keys import LOCK_TIMEOUT, tenant_pk_index, tenant_primary_key

SEARCH_KEY = "sessions_app_itemsearch_tenant_pk"

SEARCH_PK = f"""
DO $$
DECLARE old text;
BEGIN
  SELECT conname INTO old FROM pg_constraint WHERE conrelid = 'sessions_app_itemsearch'::regclass
    AND contype = 'p' AND conname <> '{SEARCH_KEY}';
  IF old IS NOT NULL THEN
    {LOCK_TIMEOUT};
    EXECUTE format('ALTER TABLE sessions_app_itemsearch DROP CONSTRAINT %I, '
                   'ADD CONSTRAINT {SEARCH_KEY} PRIMARY KEY USING INDEX {SEARCH_KEY}', old);
  END IF;
END $$"""

SEARCH_PK_BACK = f"""
ALTER TABLE sessions_app_itemsearch DROP CONSTRAINT {SEARCH_KEY},
    ADD CONSTRAINT sessions_app_itemsearch_pkey PRIMARY KEY (item_id);
CREATE UNIQUE INDEX IF NOT EXISTS {SEARCH_KEY} ON sessions_app_itemsearch (item_id, tenant_id)
"""

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"


def writers(conflict: str, same_tenant: str) -> str:
    """The functions that write the search index, with the key's columns (`conflict`) and the
    tenant in the join of the rows they remove (`same_tenant`)."""
    return f"""
CREATE OR REPLACE FUNCTION stateroom_unindex_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    DELETE FROM sessions_app_itemsearch s USING old_items o WHERE s.item_id = o.id{same_tenant};
    RETURN NULL;
END
$$;
CREATE OR REPLACE FUNCTION stateroom_reindex_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    DELETE FROM sessions_app_itemsearch s USING old_items o WHERE s.item_id = o.id{same_tenant};
    INSERT INTO sessions_app_itemsearch (item_id, tenant_id, search)
    SELECT id, tenant_id, search FROM (
        SELECT id, tenant_id, stateroom_item_search(payload) AS search FROM new_items
    ) n WHERE search IS NOT NULL
    ON CONFLICT ({conflict}) DO UPDATE SET search = EXCLUDED.search;
    RETURN NULL;
END
$$;
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
        WHERE s.tenant_id = t AND s.last_seq > s.indexed_seq AND s.content_fenced_at IS NULL
        ORDER BY s.id LIMIT max_sessions
    ), src AS (
        SELECT i.id, i.tenant_id, stateroom_item_search(i.payload) AS search
        FROM todo JOIN sessions_app_sessionitem i ON i.tenant_id = t AND i.session_id = todo.id
            AND i.seq > todo.done AND i.seq <= todo.upto
        FOR SHARE OF i
    ), ins AS (
        INSERT INTO sessions_app_itemsearch (item_id, tenant_id, search)
        SELECT src.id, src.tenant_id, src.search FROM src WHERE src.search IS NOT NULL
        ON CONFLICT ({conflict}) DO UPDATE SET search = EXCLUDED.search
        RETURNING 1
    ), marked AS (
        UPDATE sessions_app_session s SET indexed_seq = GREATEST(s.indexed_seq, todo.upto)
        FROM todo WHERE s.tenant_id = t AND s.id = todo.id
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM marked)::integer, (SELECT count(*) FROM src)::integer;
END
$$;
"""


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("sessions_app", "0010_search_off_the_append_path"),
        ("runs_app", "0008_tenant_keys"),
        ("lifecycle_app", "0002_tenant_keys"),
    ]

    operations = [
        tenant_pk_index("sessions_app_sessionitem"),
        tenant_primary_key("sessions_app_sessionitem"),
        tenant_primary_key("sessions_app_session"),
        migrations.RunSQL(
            f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {SEARCH_KEY}"
            " ON sessions_app_itemsearch (item_id, tenant_id)",
            f"DROP INDEX CONCURRENTLY IF EXISTS {SEARCH_KEY}",
            elidable=False,
        ),
        migrations.RunSQL(SEARCH_PK, SEARCH_PK_BACK, elidable=False),
        migrations.RunSQL(
            writers("item_id, tenant_id", " AND s.tenant_id = o.tenant_id"),
            writers("item_id", ""),
        ),
    ]
