"""The console's heavy reads on a real streaming replica (stateroom/replica.py).

The module's fixture runs a primary of its own (initdb on a loopback port),
migrates it, seeds two tenants, copies it with `pg_basebackup -R` into a hot
standby started with `recovery_min_apply_delay = '1h'`: the replica holds what
the primary had at the copy, and nothing committed after it. The web server serves
the project on the primary with `DATABASE_REPLICA_URL` at the standby.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import httpx
import psycopg
import pytest

from stateroom.database import APP_ROLE
from tests.infra import ROOT, subprocess_env, web_server
from tests.replication import Pair, primary_and_replica

REASON = "replica pin check 7f3a"


def _seed(pair: Pair) -> dict:
    env = subprocess_env(DATABASE_URL=pair.primary_url())
    done = subprocess.run(
        [sys.executable, "-m", "tests.replica.seed"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def cluster():
    with primary_and_replica(_seed, delay="1h") as pair:
        env = subprocess_env(
            DATABASE_URL=pair.primary_url(),
            DATABASE_REPLICA_URL=pair.replica_url(),
            DB_REPLICA_PIN_SECONDS="600",  # the pin outlives the test; its end is unit-tested
        )
        with web_server(env) as base:
            yield pair, base


def browser(base: str, seeded: dict, username: str) -> httpx.Client:
    return httpx.Client(base_url=base, cookies={seeded["cookie"]: seeded[username]}, timeout=20)


def hold(http: httpx.Client, session_id: str, reason: str) -> httpx.Response:
    page = http.get(f"/t/acme/sessions/{session_id}/hold?on=1")
    assert page.status_code == 200, page.text[-2000:]
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    return http.post(
        f"/t/acme/sessions/{session_id}/hold",
        data={"on": "1", "reason": reason, "csrfmiddlewaretoken": csrf},
        headers={"Referer": f"{http.base_url}/t/acme/sessions/{session_id}/hold"},
    )


def test_after_a_write_the_browser_reads_the_primary_and_others_read_the_lagging_replica(cluster):
    pair, base = cluster
    seeded = pair.seeded
    with browser(base, seeded, "ada") as writer, browser(base, seeded, "ada") as other:
        assert "acme-s1" in other.get("/t/acme/sessions/").text  # seeded: on the replica too
        assert REASON not in other.get("/t/acme/audit/").text

        done = hold(writer, "acme-s1", REASON)
        assert done.status_code == 302, done.text[-2000:]
        assert "stateroom_primary_until" in done.cookies

        # The writer's next pages read the primary: its own write is there.
        pinned = writer.get("/t/acme/audit/")
        assert pinned.status_code == 200
        assert REASON in pinned.text
        assert "session.legal_hold_on" in pinned.text
        export = writer.get("/t/acme/audit/export.jsonl")
        assert REASON in export.text

        # Another browser of the same user, without the pin, reads the replica, an hour behind.
        stale = other.get("/t/acme/audit/")
        assert stale.status_code == 200
        assert "session.legal_hold_on" not in stale.text and REASON not in stale.text
        assert REASON not in other.get("/t/acme/audit/export.jsonl").text
        # ...while a page that is not one of the chosen reads answers from the primary.
        detail = other.get("/t/acme/sessions/acme-s1/")
        assert detail.status_code == 200 and "Release legal hold" in detail.text

        # A forged pin is no pin.
        forged = browser(base, seeded, "ada")
        forged.cookies.set("stateroom_primary_until", "99999999999.0")
        assert REASON not in forged.get("/t/acme/audit/").text
        forged.close()

        # Once the replica catches up, the unpinned browser sees the write there too.
        pair.lag("0")
        pair.caught_up()
        assert REASON in other.get("/t/acme/audit/").text
        pair.lag("1h")


def test_row_level_security_holds_on_the_replica(cluster):
    pair, base = cluster
    seeded = pair.seeded
    with browser(base, seeded, "ada") as ada:
        sessions = ada.get("/t/acme/sessions/")
        assert sessions.status_code == 200
        assert "acme-s1" in sessions.text and "globex-s1" not in sessions.text
        assert ada.get("/t/globex/sessions/").status_code == 404
    with browser(base, seeded, "bob") as bob:
        sessions = bob.get("/t/globex/sessions/")
        assert "globex-s1" in sessions.text and "acme-s1" not in sessions.text

    # The app role on the standby itself: its tenant's rows with the tenant set, none without.
    with psycopg.connect(pair.replica_url(APP_ROLE)) as conn:
        assert conn.execute("SELECT pg_is_in_recovery()").fetchone()[0] is True
        assert conn.execute("SELECT count(*) FROM sessions_app_session").fetchone()[0] == 0
        tenant = conn.execute("SELECT id FROM tenancy_app_tenant WHERE slug = 'acme'").fetchone()[0]
        conn.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant)])
        seen = conn.execute("SELECT session_id FROM sessions_app_session ORDER BY 1").fetchall()
        assert seen == [("acme-s1",), ("acme-s2",)]
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            conn.execute("UPDATE sessions_app_session SET legal_hold = true")


def test_a_replica_that_is_down_sends_the_chosen_reads_to_the_primary(cluster):
    """Last in the module: it stops the standby."""
    pair, base = cluster
    reason = "replica down check 91c2"
    with browser(base, pair.seeded, "ada") as writer, browser(base, pair.seeded, "ada") as other:
        assert hold(writer, "acme-s2", reason).status_code == 302
        assert reason not in other.get("/t/acme/audit/").text  # the replica, behind
        pair.stop_replica()
        page = other.get("/t/acme/audit/")
        assert page.status_code == 200
        assert reason in page.text  # read on the primary
