"""bench.floor_tables: the floor's own tables are built once, and anew when Stateroom's
columns moved since (a data set reused after a migration)."""

import psycopg
import pytest
from django.conf import settings

from bench import floor_tables
from bench.database import libpq_url
from tests.infra import database_url


@pytest.mark.django_db
def test_the_floor_is_built_once_and_again_when_its_columns_are_not_stateroom_s():
    owner = settings.DATABASE_OWNER
    app_url = database_url()
    owner_url = database_url(user=owner["USER"], password=owner.get("PASSWORD"))
    built: list[str] = []
    try:
        floor_tables.ensure(app_url, owner_url, [], built.append)
        floor_tables.ensure(app_url, owner_url, [], built.append)  # there: kept
        assert len(built) == 1
        with psycopg.connect(libpq_url(owner_url), autocommit=True) as conn:
            assert floor_tables._built(conn)
            # What a migration adding a column to runs would leave: the floor one short.
            conn.execute("ALTER TABLE floor.run DROP COLUMN model")
            assert not floor_tables._built(conn)
        floor_tables.ensure(app_url, owner_url, [], built.append)
        assert len(built) == 2
        with psycopg.connect(libpq_url(owner_url), autocommit=True) as conn:
            assert floor_tables._built(conn)
            assert "model" in [c for c, _ in floor_tables._column_types(conn, "floor", "run")]
    finally:
        with psycopg.connect(libpq_url(owner_url), autocommit=True) as conn:
            conn.execute("DROP SCHEMA IF EXISTS floor CASCADE")
