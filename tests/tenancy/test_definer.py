"""`tenancy_app.definer.DefinerFunction`: a replacement reverses to the body it replaced."""

from __future__ import annotations

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from stateroom.database import url_of
from tenancy_app.definer import DefinerFunction

OLD = "SELECT 1"
NEW = "SELECT 2"


class OwnerEditor:
    """What DefinerFunction uses of a schema editor, on the owner's connection."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.connection = self

    def cursor(self):
        return self.conn.cursor()

    def execute(self, sql: str, params=None) -> None:
        self.conn.execute(sql)

    def quote_name(self, name: str) -> str:
        return f'"{name}"'


def answer(conn) -> int | None:
    found = conn.execute("SELECT to_regproc('stateroom_definer_probe')").fetchone()[0]
    return None if found is None else conn.execute("SELECT stateroom_definer_probe()").fetchone()[0]


@pytest.mark.django_db
def test_a_replacement_reverses_to_the_body_it_replaced():
    first = DefinerFunction("stateroom_definer_probe", "", "int", OLD)
    second = DefinerFunction("stateroom_definer_probe", "", "int", NEW, replaces=OLD)
    url = url_of(connection.settings_dict, role=settings.DATABASE_OWNER)
    with psycopg.connect(url) as conn:  # one transaction, rolled back
        editor = OwnerEditor(conn)
        first.database_forwards("tenancy_app", editor, None, None)
        second.database_forwards("tenancy_app", editor, None, None)
        assert answer(conn) == 2
        second.database_backwards("tenancy_app", editor, None, None)
        assert answer(conn) == 1
        first.database_backwards("tenancy_app", editor, None, None)
        assert answer(conn) is None
        conn.rollback()
    assert second.deconstruct()[2] == {"replaces": OLD}
