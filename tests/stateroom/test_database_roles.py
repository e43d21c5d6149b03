"""The app connects as a role that row-level security binds and that owns nothing."""

import pytest
from django.conf import settings
from django.db import DatabaseError, connection, transaction

from stateroom.database import configured_databases

pytestmark = pytest.mark.embedded_db  # also run on the embedded server (CI, .ci/run)


def test_the_tests_connect_as_an_app_role_that_cannot_bypass_rls_or_own_tables(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_user, rolsuper, rolbypassrls, rolcreaterole, rolcreatedb"
            " FROM pg_roles WHERE rolname = current_user"
        )
        user, superuser, bypassrls, createrole, createdb = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND pg_get_userbyid(c.relowner) = current_user"
        )
        owned = cursor.fetchone()[0]
        cursor.execute(
            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) = current_user"
        )
        owned_functions = cursor.fetchone()[0]
        cursor.execute(
            "SELECT pg_has_role(current_user, %s, 'MEMBER')", [settings.DATABASE_OWNER["USER"]]
        )
        member_of_owner = cursor.fetchone()[0]
    assert user == settings.DATABASE_APP["USER"] != settings.DATABASE_OWNER["USER"]
    assert (superuser, bypassrls, createrole, createdb) == (False, False, False, False)
    assert owned == 0 and owned_functions == 0
    assert member_of_owner is False


def test_every_table_is_owned_by_the_owner_role(db):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT pg_get_userbyid(c.relowner) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S', 'v')"
        )
        owners = {row[0] for row in cursor.fetchall()}
    assert owners == {settings.DATABASE_OWNER["USER"]}


def test_the_app_role_cannot_change_the_schema(db):
    with pytest.raises(DatabaseError, match="must be owner"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE sessions_app_session NO FORCE ROW LEVEL SECURITY")
    with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("CREATE TABLE sneaky (id int)")


def test_database_url_must_name_postgresql():
    with pytest.raises(Exception, match="PostgreSQL is the only database"):
        configured_databases({"DATABASE_URL": "mysql://app@127.0.0.1/stateroom"})


def test_owner_url_must_name_the_app_database():
    with pytest.raises(Exception, match="same database"):
        configured_databases(
            {
                "DATABASE_URL": "postgres://app@127.0.0.1:5432/stateroom",
                "DATABASE_OWNER_URL": "postgres://owner@127.0.0.1:5432/other",
            }
        )
