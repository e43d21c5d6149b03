"""The search index of session items that row-level security lets PostgreSQL use.

Under a row-level security policy PostgreSQL may use an index only for the
policy's own conditions and for LEAKPROOF operators: any other condition of
the query must wait until the policy has passed the row. The text search
match `@@` (ts_match_vq) is not LEAKPROOF (only a superuser could declare it
so), so `item_search_gin` on the items never serves the app's query: the
planner walks the tenant's items and tests each one (a rare phrase at 1 M
items read a third of the table, 400-600 ms).

Here the match is part of the policy. `sessions_app_itemsearch` holds each
item's tsvector (id, tenant, search) and lets a reader see only the rows of
the tenant in `app.tenant_id` that match the tsquery in `app.item_search`
(transaction-local, set by `SessionReads.search_items`); without it nothing
is visible. Being the policy's, the match is a security qual like the tenant
condition, and its GIN index can answer it.

Rows are written and removed by statement triggers on the items (INSERT,
UPDATE, DELETE, TRUNCATE): functions owned by the owner role, which this
table does not bind (RLS enabled, not forced, as for the tables SECURITY
DEFINER functions read), reading only the transition tables of the rows the
caller wrote through the items' own policy. The app role may only
read it, through the policy.
"""

from django.db import migrations

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"
QUERY = "NULLIF(current_setting('app.item_search', true), '')::tsquery"

FORWARD = f"""
-- The tenant's items newest first, for the search's window. On `-id`, an order
-- the primary key cannot give: else the planner, thinking a tenant's items
-- spread evenly, walks the primary key back through every tenant's items
-- (at 1 M items 666,000 of others' for 5,000 of bench-t000's).
CREATE INDEX item_tenant_newest ON sessions_app_sessionitem (tenant_id, (-id));

CREATE TABLE sessions_app_itemsearch (
    item_id bigint PRIMARY KEY,
    tenant_id bigint NOT NULL,
    search tsvector NOT NULL
);
CREATE INDEX itemsearch_gin ON sessions_app_itemsearch USING gin (search);
ALTER TABLE sessions_app_itemsearch ENABLE ROW LEVEL SECURITY;
CREATE POLICY item_search_read ON sessions_app_itemsearch FOR SELECT
    USING (tenant_id = {TENANT} AND search @@ {QUERY});

CREATE FUNCTION stateroom_index_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    INSERT INTO sessions_app_itemsearch (item_id, tenant_id, search)
    SELECT id, tenant_id, search FROM new_items WHERE search IS NOT NULL;
    RETURN NULL;
END
$$;
CREATE FUNCTION stateroom_unindex_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    DELETE FROM sessions_app_itemsearch s USING old_items o WHERE s.item_id = o.id;
    RETURN NULL;
END
$$;
CREATE FUNCTION stateroom_reindex_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    DELETE FROM sessions_app_itemsearch s USING old_items o WHERE s.item_id = o.id;
    INSERT INTO sessions_app_itemsearch (item_id, tenant_id, search)
    SELECT id, tenant_id, search FROM new_items WHERE search IS NOT NULL;
    RETURN NULL;
END
$$;
CREATE FUNCTION stateroom_unindex_all_items() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public AS $$
BEGIN
    TRUNCATE sessions_app_itemsearch;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION stateroom_index_items(), stateroom_unindex_items(),
    stateroom_reindex_items(), stateroom_unindex_all_items() FROM PUBLIC;
CREATE TRIGGER item_search_index AFTER INSERT ON sessions_app_sessionitem
    REFERENCING NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION stateroom_index_items();
CREATE TRIGGER item_search_unindex AFTER DELETE ON sessions_app_sessionitem
    REFERENCING OLD TABLE AS old_items
    FOR EACH STATEMENT EXECUTE FUNCTION stateroom_unindex_items();
CREATE TRIGGER item_search_reindex AFTER UPDATE ON sessions_app_sessionitem
    REFERENCING OLD TABLE AS old_items NEW TABLE AS new_items
    FOR EACH STATEMENT EXECUTE FUNCTION stateroom_reindex_items();
CREATE TRIGGER item_search_unindex_all AFTER TRUNCATE ON sessions_app_sessionitem
    FOR EACH STATEMENT EXECUTE FUNCTION stateroom_unindex_all_items();

-- The items already stored, tenant by tenant (the items' policy shows one at a time).
DO $fill$
DECLARE
    t bigint;
BEGIN
    FOR t IN SELECT id FROM tenancy_app_tenant ORDER BY id LOOP
        PERFORM set_config('app.tenant_id', t::text, true);
        INSERT INTO sessions_app_itemsearch (item_id, tenant_id, search)
        SELECT id, tenant_id, search FROM sessions_app_sessionitem
        WHERE tenant_id = t AND search IS NOT NULL;
    END LOOP;
    PERFORM set_config('app.tenant_id', '', true);
END
$fill$;
ANALYZE sessions_app_itemsearch;
"""

BACKWARD = """
DROP TRIGGER IF EXISTS item_search_index ON sessions_app_sessionitem;
DROP TRIGGER IF EXISTS item_search_unindex ON sessions_app_sessionitem;
DROP TRIGGER IF EXISTS item_search_reindex ON sessions_app_sessionitem;
DROP TRIGGER IF EXISTS item_search_unindex_all ON sessions_app_sessionitem;
DROP FUNCTION IF EXISTS stateroom_index_items();
DROP FUNCTION IF EXISTS stateroom_unindex_items();
DROP FUNCTION IF EXISTS stateroom_reindex_items();
DROP FUNCTION IF EXISTS stateroom_unindex_all_items();
DROP TABLE IF EXISTS sessions_app_itemsearch;
DROP INDEX IF EXISTS item_tenant_newest;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_deletion_moves_to_lifecycle_lease_fence"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
