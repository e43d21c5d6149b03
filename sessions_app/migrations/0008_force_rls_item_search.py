"""FORCE row-level security on the item search index, as on every tenant table.

Its writers are the items' statement triggers (SECURITY DEFINER functions
owned by the owner role, sessions 0006), which run in the tenant of the items
written. Forced, the owner is bound too: `item_search_owner` lets it read and
write the rows of the tenant in `app.tenant_id` only (the app role keeps only
`item_search_read`, which also asks for the search's tsquery).
"""

from django.db import migrations

TENANT = "NULLIF(current_setting('app.tenant_id', true), '')::bigint"

FORWARD = f"""
ALTER TABLE sessions_app_itemsearch FORCE ROW LEVEL SECURITY;
CREATE POLICY item_search_owner ON sessions_app_itemsearch TO CURRENT_USER
    USING (tenant_id = {TENANT}) WITH CHECK (tenant_id = {TENANT});
"""

BACKWARD = """
DROP POLICY IF EXISTS item_search_owner ON sessions_app_itemsearch;
ALTER TABLE sessions_app_itemsearch NO FORCE ROW LEVEL SECURITY;
"""


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_drop_unusable_item_gin"),
    ]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
