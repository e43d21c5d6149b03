"""Security records: refused attempts, user agents, and the chain head anchored outside the table."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client

from audit_app.anchor import latest_anchors, write_anchors
from audit_app.models import AuditEvent
from audit_app.services import _legacy_hash, record_event, verify_chain
from sessions_app.store import SessionStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.infra import admin_connection
from tests.runs.conftest import make_task


def events(tenant, action: str | None = None) -> list[AuditEvent]:
    with in_tenant(tenant):
        found = AuditEvent.objects.filter(tenant=tenant).order_by("seq")
        if action:
            found = found.filter(action=action)
        return list(found)


def test_another_tenants_id_is_recorded_once_per_actor_and_window_as_access_denied(
    tenant_a, tenant_b, make_token
):
    with in_tenant(tenant_a):
        SessionStore(tenant_a, Actor.system("test")).create(session_id="s-a", user_id="alice")
    prober = Client(
        headers={"Authorization": f"Bearer {make_token(tenant_b)}", "User-Agent": "probe/1.0"}
    )
    for _ in range(3):
        assert prober.get("/api/v1/sessions/s-a").status_code == 404
    assert prober.post("/api/v1/sessions/s-a/close", "{}", "application/json").status_code == 404
    # One record for the window (the first refusal), in the prober's own tenant.
    denied = events(tenant_b, "access.denied")
    assert [(e.target_type, e.target_id, e.after) for e in denied] == [
        (
            "request",
            "/api/v1/sessions/s-a",
            {"status": 404, "code": "not_found", "method": "GET", "window_seconds": 600},
        ),
    ]
    assert {(e.actor_type, e.actor_label, e.user_agent) for e in denied} == {
        ("token", "token:worker", "probe/1.0")
    }
    assert events(tenant_a, "access.denied") == []  # nothing about A leaks into B's log
    with in_tenant(tenant_b):
        assert verify_chain(tenant_b) is None


def test_role_refusals_and_foreign_consoles_are_recorded(tenant_a, tenant_b, support_a, admin_b):
    support = login(support_a)
    assert support.post("/t/acme/settings/four-eyes", {"on": "on"}).status_code == 403
    [refused] = events(tenant_a, "access.denied")
    assert (refused.actor_label, refused.target_id, refused.after["status"]) == (
        "sue",
        "/t/acme/settings/four-eyes",
        403,
    )
    outsider = login(admin_b)
    assert outsider.get("/t/acme/sessions/").status_code == 404
    # In the outsider's own tenant's log, not in the log of the tenant they tried.
    assert len(events(tenant_a, "access.denied")) == 1
    [foreign] = events(tenant_b, "access.denied")
    assert (foreign.actor_label, foreign.target_id, foreign.after) == (
        "bob",
        "/t/acme/sessions/",
        {"status": 404, "code": "not_a_member", "method": "GET", "window_seconds": 600},
    )


def test_a_member_of_one_tenant_cannot_write_into_another_tenants_log(
    tenant_a, tenant_b, admin_a, admin_b, make_user, caplog
):
    before = len(events(tenant_a))
    outsider = login(admin_b)
    for n in range(50):
        assert outsider.get(f"/t/acme/sessions/{'x' * 300}-{n}/").status_code == 404
    assert len(events(tenant_a)) == before
    # Fifty refusals, one record in bob's own log, its path capped.
    [denied] = events(tenant_b, "access.denied")
    assert denied.target_id == f"/t/acme/sessions/{'x' * 300}-0/"[:128]
    # Someone in no tenant writes no tenant's log; the refusal is in the security log.
    caplog.set_level("WARNING", logger="stateroom.security")
    loner = login(make_user("loner"))
    assert loner.get("/t/acme/sessions/").status_code == 404
    assert len(events(tenant_a)) == before and len(events(tenant_b)) == 1
    assert "access denied: loner GET /t/acme/sessions/ -> 404 not_a_member" in caplog.text


def test_the_user_agent_is_recorded_with_each_action(tenant_a, admin_a):
    client = login(admin_a)
    client.post("/t/acme/settings/four-eyes", {"on": "on"}, headers={"User-Agent": "Firefox/140.0"})
    [changed] = events(tenant_a, "tenant.settings_changed")
    assert (changed.actor_label, changed.user_agent, changed.canon) == ("ada", "Firefox/140.0", 2)


def test_events_hashed_before_rfc_8785_still_verify(tenant_a):
    from django.utils import timezone

    from audit_app.services import GENESIS_HASH

    with in_tenant(tenant_a):
        # Row 1 as the older code wrote it: canon 1, hashed over the older spelling.
        legacy = AuditEvent(
            tenant=tenant_a,
            seq=1,
            created_at=timezone.now(),
            actor_type="system",
            actor_id="system",
            actor_label="old",
            action="tenant.settings_changed",
            target_type="tenant",
            target_id="acme",
            after={"note": "é"},
            prev_hash=GENESIS_HASH,
            canon=1,
        )
        legacy.hash = _legacy_hash(legacy)
        legacy.save(force_insert=True)
        newer = record_event(
            tenant=tenant_a,
            actor=Actor.system("test"),
            action="tenant.settings_changed",
            target_type="tenant",
            target_id="acme",
        )
        assert (newer.canon, newer.prev_hash) == (2, legacy.hash)
        assert verify_chain(tenant_a) is None
        # A legacy row whose content changed is still caught.
        legacy.after = {"note": "e"}
        assert _legacy_hash(legacy) != legacy.hash


@pytest.mark.django_db(transaction=True)
def test_verify_audit_anchor_catches_the_newest_rows_deleted(tenant_a, tmp_path, capsys):
    with in_tenant(tenant_a):
        for n in range(3):
            record_event(
                tenant=tenant_a,
                actor=Actor.system("test"),
                action="session.closed",
                target_type="session",
                target_id=f"s{n}",
            )
    assert write_anchors(tmp_path) == 1
    [line] = (tmp_path / "audit-anchors.jsonl").read_text().splitlines()
    assert json.loads(line)["seq"] == 3
    assert latest_anchors(tmp_path)[tenant_a.pk].seq == 3
    call_command("verify_audit", "--anchor", str(tmp_path))
    assert "ok: tenant acme (anchored head present)" in capsys.readouterr().out

    # Deleting needs more than the app has: the table's trigger refuses it even to
    # its owner, so the test does it as a superuser with triggers off.
    with admin_connection(database=connection.settings_dict["NAME"]) as admin:
        admin.execute("SET session_replication_role = replica")
        admin.execute(
            "DELETE FROM audit_app_auditevent WHERE tenant_id = %s AND seq = 3", [tenant_a.pk]
        )

    call_command("verify_audit")  # the shortened chain is a valid chain
    with pytest.raises(SystemExit) as exit_:
        call_command("verify_audit", "--anchor", str(tmp_path))
    assert exit_.value.code == 1
    assert "BROKEN: tenant acme: anchored head #3 (at " in capsys.readouterr().err


def test_an_unused_langgraph_thread_name_is_404_but_no_access_denied(
    tenant_a, tenant_b, make_token, caplog
):
    """A thread id is a name in the caller's own tenant: the saver's first look at a new
    thread (and a delete, copy or prune of one never written) is routine, not a probe.
    A task's public id of another tenant stays a denial."""
    make_task(tenant_a, "t-a")
    runtime = Client(headers={"Authorization": f"Bearer {make_token(tenant_b)}"})
    new = runtime.get("/api/v1/langgraph/checkpoints", {"thread_id": "conversation 7"})
    assert (new.status_code, new.json()["error"]["code"]) == (404, "not_found")
    for path in ("delete", "prune"):
        response = runtime.post(
            f"/api/v1/langgraph/threads/{path}", {"thread_id": "t-a"}, "application/json"
        )
        assert response.status_code == 404
    assert events(tenant_b, "access.denied") == []
    assert "access denied" not in caplog.text
    assert runtime.get("/api/v1/tasks/t-a/langgraph/checkpoints").status_code == 404
    [denied] = events(tenant_b, "access.denied")
    assert denied.target_id == "/api/v1/tasks/t-a/langgraph/checkpoints"
