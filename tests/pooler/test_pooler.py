"""Stateroom behind PgBouncer in transaction mode, for real (docs/scaling.md).

Debian's pgbouncer is started by the test on a loopback port in front of the
test database. Declared (`DB_POOLER=transaction`) everything works, the
background jobs included; undeclared, a process refuses to start instead of
answering wrong.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tenancy_app.models import Tenant, TokenRole
from tests.infra import ROOT, pgbouncer, pooled_url, subprocess_env, web_server

SETTINGS_PROBE = """
import json, django
django.setup()
from django.db import connection
s = connection.settings_dict
print(json.dumps({"pooler": s["POOLER"], "cursors_off": s["DISABLE_SERVER_SIDE_CURSORS"],
                  "prepare": s["OPTIONS"]["prepare_threshold"]}))
"""


def pooled_env(port: int, **extra: str) -> dict[str, str]:
    return subprocess_env(DATABASE_URL=pooled_url(port), DB_CONN_MAX_AGE="600", **extra)


def python(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def settings_with(**env: str) -> dict:
    done = python(SETTINGS_PROBE, subprocess_env(**env))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_db_pooler_transaction_turns_off_what_a_transaction_pooler_cannot_carry(db):
    assert settings_with() == {"pooler": "", "cursors_off": False, "prepare": 5}
    assert settings_with(DB_POOLER="transaction") == {
        "pooler": "transaction",
        "cursors_off": True,
        "prepare": None,
    }
    # PgBouncer >= 1.21 with max_prepared_statements: preparing may be turned back on.
    assert settings_with(DB_POOLER="transaction", DB_PREPARE_THRESHOLD="5")["prepare"] == 5
    assert settings_with(DB_POOLER="session") == {
        "pooler": "session",
        "cursors_off": False,
        "prepare": 5,
    }
    refused = python(SETTINGS_PROBE, subprocess_env(DB_POOLER="pgbouncer"))
    assert refused.returncode != 0
    assert "DB_POOLER must be transaction or session, got 'pgbouncer'" in refused.stderr


CONNECT = """
import django
django.setup()
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM tenancy_app_tenant")
    print(cursor.fetchone()[0])
"""


@pytest.mark.django_db(transaction=True)
def test_an_undeclared_pooler_is_refused_and_a_declared_one_works(tenant_a):
    with pgbouncer(pool_size=2) as port:
        undeclared = python(CONNECT, pooled_env(port))
        assert undeclared.returncode != 0
        assert "UndeclaredPooler" in undeclared.stderr
        assert "DB_POOLER=transaction for PgBouncer in pool_mode=transaction" in undeclared.stderr
        declared = python(CONNECT, pooled_env(port, DB_POOLER="transaction"))
        assert (declared.returncode, declared.stdout) == (0, "1\n"), declared.stderr[-2000:]
    direct = python(CONNECT, subprocess_env())
    assert (direct.returncode, direct.stdout) == (0, "1\n"), direct.stderr[-2000:]


@pytest.mark.django_db(transaction=True)
def test_the_web_server_behind_an_undeclared_pooler_does_not_start(tenant_a):
    with pgbouncer(pool_size=2) as port:
        with pytest.raises(RuntimeError, match="UndeclaredPooler") as refused:
            with web_server(pooled_env(port)):
                pass
        assert "pool_mode=transaction" in str(refused.value)


@pytest.mark.django_db(transaction=True)
def test_the_api_behind_a_declared_pooler_serves_two_workers(make_token, tenant_a):
    token = make_token(tenant_a, TokenRole.RUNTIME)
    headers = {"Authorization": f"Bearer {token}"}
    with (
        pgbouncer(pool_size=2) as port,
        web_server(pooled_env(port, DB_POOLER="transaction"), workers=2) as base,
    ):
        created = httpx.post(
            f"{base}/api/v1/sessions", json={"user_id": "u1"}, headers=headers, timeout=10
        )
        assert created.status_code == 201, created.text
        session_id = created.json()["session_id"]

        def append(i: int) -> int:
            body = {"items": [{"role": "user", "item_type": "message", "payload": {"n": i}}]}
            url = f"{base}/api/v1/sessions/{session_id}/items"
            return httpx.post(url, json=body, headers=headers, timeout=10).status_code

        with ThreadPoolExecutor(8) as pool:
            statuses = list(pool.map(append, range(40)))
        assert statuses == [201] * 40
        items = httpx.get(
            f"{base}/api/v1/sessions/{session_id}/items?limit=100", headers=headers, timeout=10
        ).json()["results"]
    assert sorted(item["payload"]["n"] for item in items) == list(range(40))
    assert [item["seq"] for item in items] == list(range(1, 41))


@pytest.mark.django_db(transaction=True)
def test_eight_processes_walk_the_tenants_through_the_pooler_without_a_failure(make_tenant):
    for slug in ("t1", "t2", "t3", "t4", "t5"):
        make_tenant(slug)
    tenants = Tenant.objects.count()
    with pgbouncer(pool_size=4) as port:
        env = pooled_env(port, DB_POOLER="transaction")
        walkers = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.pooler.walk_tenants", "200"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(8)
        ]
        results = [walker.communicate(timeout=300) for walker in walkers]
    assert [w.returncode for w in walkers] == [0] * 8, [err[-2000:] for _, err in results]
    assert [out for out, _ in results] == [f"200 0 {tenants}\n"] * 8


@pytest.mark.django_db(transaction=True)
def test_walking_the_tenants_holds_no_cursor_between_statements(make_tenant):
    """Even with server-side cursors on (no DB_POOLER), the walk leaves none open."""
    from django.db import connection

    from tenancy_app import jobs

    for slug in ("t1", "t2", "t3"):
        make_tenant(slug)
    assert connection.settings_dict["DISABLE_SERVER_SIDE_CURSORS"] is False
    walk = jobs.tenants()
    first = next(walk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_cursors")
        open_cursors = cursor.fetchone()[0]
    assert (first.slug, open_cursors, [t.slug for t in walk]) == ("t1", 0, ["t2", "t3"])


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("program", ["worker", "beat"])
def test_a_celery_worker_or_beat_behind_an_undeclared_pooler_does_not_start(program, tenant_a):
    from pathlib import Path

    celery = str(Path(sys.executable).with_name("celery"))
    schedule = tempfile.mkdtemp(prefix="pooler-beat-")
    args = {
        "worker": ["-P", "solo", "--without-gossip", "--without-mingle"],
        "beat": ["-s", f"{schedule}/schedule"],
    }
    with pgbouncer(pool_size=1) as port:
        done = subprocess.run(
            [celery, "-A", "stateroom", program, *args[program], "-l", "INFO"],
            cwd=ROOT,
            env=pooled_env(port, CELERY_BROKER_URL="redis://127.0.0.1:1/0"),
            capture_output=True,
            text=True,
            timeout=60,
        )
    shutil.rmtree(schedule, ignore_errors=True)
    assert done.returncode != 0
    assert "stateroom: The database connection goes through a pooler or proxy" in (
        done.stdout + done.stderr
    )
