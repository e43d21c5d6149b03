import psycopg
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from audit_app.models import AuditEvent, AuditPayload
from audit_app.services import GENESIS_HASH, payload_digest, record_event, verify_chain
from audit_app.store import AuditStore
from stateroom.actor import Actor
from tenancy_app.scoping import in_tenant


def record(tenant, n=1, **kw):
    with in_tenant(tenant):
        for i in range(n):
            record_event(
                tenant=tenant,
                actor=Actor.system(),
                action=kw.get("action", "session.closed"),
                target_type="session",
                target_id=f"s-{i}",
                before={"status": "active"},
                after={"status": "closed", "api_token": "sr_secret"},
                reason="test",
            )


def test_events_form_a_hash_chain_per_tenant(tenant_a, tenant_b):
    record(tenant_a, 3)
    record(tenant_b, 2)
    with in_tenant(tenant_a):
        events = list(AuditEvent.objects.order_by("seq"))
        assert verify_chain(tenant_a) is None
    assert [e.seq for e in events] == [1, 2, 3]
    assert events[0].prev_hash == GENESIS_HASH
    assert events[1].prev_hash == events[0].hash
    assert events[0].after == {"status": "closed", "api_token": "***"}
    with in_tenant(tenant_b):
        assert list(AuditEvent.objects.values_list("seq", flat=True).order_by("seq")) == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_record_event_outside_a_transaction_is_refused(make_tenant):
    from django_scopes import scope

    tenant = make_tenant("solo")
    with scope(tenant=tenant), pytest.raises(RuntimeError, match="inside the transaction"):
        record_event(
            tenant=tenant, actor=Actor.system(), action="x", target_type="t", target_id="1"
        )


@pytest.mark.django_db(transaction=True)
def test_verify_audit_command_fails_on_tampered_row(tenant_a, tamper_audit, capsys):
    record(tenant_a, 3)
    call_command("verify_audit")
    assert "ok: tenant acme" in capsys.readouterr().out
    # Only the tables' owner can switch the append-only trigger off; the app role cannot.
    tamper_audit(tenant_a, 2, "nothing to see")
    with pytest.raises(SystemExit) as exit_info:
        call_command("verify_audit", "--tenant", "acme")
    assert exit_info.value.code == 1
    assert "event #2" in capsys.readouterr().err


@pytest.mark.parametrize(
    "statement",
    ["UPDATE audit_app_auditevent SET reason = 'x'", "DELETE FROM audit_app_auditevent"],
)
@pytest.mark.django_db(transaction=True)
def test_audit_rows_cannot_be_updated_or_deleted(tenant_a, owner_sql, statement):
    record(tenant_a, 1)
    # The app role has no UPDATE or DELETE privilege on the table...
    with in_tenant(tenant_a):
        with pytest.raises(DatabaseError, match="permission denied"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement)
    # ...and even the owner meets the append-only trigger.
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="append-only"):
        owner_sql(statement, tenant=tenant_a)
    with in_tenant(tenant_a):
        assert AuditEvent.objects.get().reason == "test"


def test_app_role_cannot_disable_the_append_only_trigger(tenant_a):
    with pytest.raises(DatabaseError, match="must be owner"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "ALTER TABLE audit_app_auditevent DISABLE TRIGGER audit_event_append_only"
            )


def runtime_token_event(tenant, reason: str, **content):
    """What a runtime token writes: its reason (and any content) goes to the detached payload."""
    with in_tenant(tenant):
        return record_event(
            tenant=tenant,
            actor=Actor("token", "7", "token:worker", role="runtime"),
            action="session.closed",
            target_type="session",
            target_id="s-1",
            after={"status": "closed"},
            reason=reason,
            content=content or None,
        )


def test_a_runtimes_words_go_to_a_detached_payload_chained_by_its_hash(tenant_a):
    event = runtime_token_event(tenant_a, "refund to card 4242", diff={"amount": 5})
    with in_tenant(tenant_a):
        payload = AuditPayload.objects.get(event=event)
        # People's tokens (operator, admin) write people's words: they stay on the event.
        admin = record_event(
            tenant=tenant_a,
            actor=Actor("token", "8", "token:dpo", role="admin"),
            action="session.closed",
            target_type="session",
            target_id="s-2",
            reason="GDPR request 4",
        )
        assert verify_chain(tenant_a) is None
    assert (event.reason, payload.content) == (
        "",
        {"reason": "refund to card 4242", "diff": {"amount": 5}},
    )
    assert event.payload_hash == payload_digest(payload.content)
    assert (payload.target_type, payload.target_id) == ("session", "s-1")
    assert (admin.reason, admin.payload_hash) == ("GDPR request 4", "")


@pytest.mark.django_db(transaction=True)
def test_a_deleted_payload_leaves_the_chain_intact_a_changed_one_breaks_it(
    tenant_a, owner_sql, capsys
):
    runtime_token_event(tenant_a, "first")
    event = runtime_token_event(tenant_a, "second")
    runtime_token_event(tenant_a, "third")
    with in_tenant(tenant_a):
        # What a content deletion does: the audit store deletes the subject's payloads.
        AuditStore(tenant_a, Actor.system("deletion")).redact_content(
            "audit_payloads", ("session", "s-1"), after=None, limit=2, now=timezone.now()
        )
        assert AuditPayload.objects.count() == 1
        assert AuditEvent.objects.count() == 3
    call_command("verify_audit", "--tenant", "acme")
    assert "ok: tenant acme" in capsys.readouterr().out
    # The payload that is left must still be what was chained.
    owner_sql(
        'UPDATE audit_app_auditpayload SET content = \'{"reason": "forged"}\'', tenant=tenant_a
    )
    with pytest.raises(SystemExit):
        call_command("verify_audit", "--tenant", "acme")
    assert "event #3" in capsys.readouterr().err
    assert event.seq == 2
