"""A database that refuses connections: 503 with the error shape and Retry-After, then recovery.

The production web server serves the project as a role of its own (made by the test,
with the app role's rights), so the connection limit this test sets to 0 and
the sessions it ends touch no other test run on the same server.
"""

from __future__ import annotations

import os

import httpx
import pytest
from django.db import connection

from tests.infra import admin_connection, database_url, subprocess_env, web_server


@pytest.fixture
def outage_role(transactional_db):
    role = f"stateroom_outage_{os.getpid()}"
    app_role = connection.settings_dict["USER"]
    with admin_connection() as admin:
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        admin.execute(
            f"CREATE ROLE \"{role}\" LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD 'outage'"
            f' IN ROLE "{app_role}"'
        )
    try:
        yield role
    finally:
        with admin_connection() as admin:
            admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT -1')
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                [role],
            )
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


def cut_off(role: str) -> None:
    """Connection limit 0, and every open session of the role ended."""
    with admin_connection() as admin:
        admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT 0')
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", [role]
        )


def restore(role: str) -> None:
    with admin_connection() as admin:
        admin.execute(f'ALTER ROLE "{role}" CONNECTION LIMIT -1')


def test_no_connection_slots_is_503_then_the_app_recovers_without_a_restart(
    outage_role, tenant_a, make_token
):
    token = make_token(tenant_a)
    env = subprocess_env(
        DATABASE_URL=database_url(user=outage_role, password="outage"),
        DB_CONN_MAX_AGE="600",  # a persistent connection, as in production
        CELERY_TASK_ALWAYS_EAGER="1",
    )
    headers = {"Authorization": f"Bearer {token}"}
    with web_server(env) as base, httpx.Client(base_url=base, headers=headers) as http:
        assert http.get("/api/v1/me").status_code == 200

        cut_off(outage_role)
        for call in (
            lambda: http.get("/api/v1/me"),  # the token lookup in the middleware fails
            lambda: http.post("/api/v1/sessions", json={"user_id": "alice"}),
            lambda: http.get("/api/v1/sessions/nope"),
        ):
            response = call()
            assert response.status_code == 503, response.text
            assert response.headers["Retry-After"] == "5"
            assert response.json() == {
                "error": {
                    "code": "database_unavailable",
                    "message": "The database is unavailable; try again shortly.",
                    "details": {},
                }
            }
        page = http.get("/t/acme/", headers={"Cookie": "sessionid=" + "a" * 32})
        assert page.status_code == 503, page.text  # the session cannot be loaded
        assert page.headers["Retry-After"] == "5"
        assert "The database is unavailable" in page.text
        assert http.get("/healthz").status_code == 200  # the process itself is fine

        restore(outage_role)
        me = http.get("/api/v1/me")
        assert me.status_code == 200, me.text
        assert me.json()["tenant"] == "acme"
        created = http.post("/api/v1/sessions", json={"user_id": "alice"})
        assert created.status_code == 201, created.text
