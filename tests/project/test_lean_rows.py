"""Rows a hot statement writes with their parent keep no key or index of their own
(`tenancy_app.models.hot_row_tenant`, issues 37 and 40).

Their parent key `(tenant_id, parent_id)` proves the tenant, and every unique key
leads with tenant and parent, so the tenant's own foreign key (a second check
per row) and Django's one-column indexes (an index write per row that no query
reads) would cost each write for nothing. Read from the migrated catalog, not
from the models, so a migration that forgets one fails here.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection

from tenancy_app.models import Tenant

HOT_TABLES = {
    "sessions_app_sessionitem",
    "sessions_app_itemappend",
    "runs_app_runtransition",
    "tasks_app_taskcheckpoint",
    "effects_app_externaleffect",
    # A LangGraph put writes a checkpoint and its blobs; put_writes a task's writes.
    "tasks_app_graphcheckpoint",
    "tasks_app_graphblob",
    "tasks_app_graphwrite",
}


def lean_models() -> set[str]:
    out = set()
    for model in apps.get_models():
        field = next((f for f in model._meta.fields if f.name == "tenant"), None)
        if field is not None and not field.db_constraint:
            out.add(model._meta.db_table)
    return out


def test_the_hot_tables_are_the_lean_ones():
    assert lean_models() == HOT_TABLES


@pytest.mark.django_db
def test_hot_rows_have_no_one_column_index():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indrelid::regclass::text, i.indexrelid::regclass::text FROM pg_index i"
            " WHERE i.indnkeyatts = 1 AND i.indrelid::regclass::text = ANY(%s)",
            [sorted(HOT_TABLES)],
        )
        assert cursor.fetchall() == []


@pytest.mark.django_db
def test_hot_rows_have_no_key_to_the_tenant_but_one_to_their_parent():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT k.conrelid::regclass::text, k.confrelid::regclass::text,"
            " array_length(k.conkey, 1) FROM pg_constraint k"
            " WHERE k.contype = 'f' AND k.conrelid::regclass::text = ANY(%s)",
            [sorted(HOT_TABLES)],
        )
        keys = cursor.fetchall()
    tenants = Tenant._meta.db_table
    assert [key for key in keys if key[1] == tenants] == []
    # Each graph row's parent key is the task's `(tenant_id, id)`: it proves the tenant.
    graph = {table: (parent, width) for table, parent, width in keys if "_graph" in table}
    assert graph == {
        table: ("tasks_app_task", 2)
        for table in ("tasks_app_graphcheckpoint", "tasks_app_graphblob", "tasks_app_graphwrite")
    }
