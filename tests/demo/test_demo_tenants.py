"""The demo creates and configures its tenants through TenancyStore: audited, four-eyes included."""

import pytest
from django.core.management import CommandError, call_command

from audit_app.models import AuditEvent
from audit_app.services import verify_chain
from demo_app.data import ensure_people
from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore


def events(tenant: Tenant) -> list[tuple[str, str, dict | None, dict | None]]:
    with in_tenant(tenant):
        rows = AuditEvent.objects.filter(target_type="tenant").order_by("seq")
        return [(e.action, e.actor_label, e.before, e.after) for e in rows]


def test_demo_tenants_are_created_and_configured_through_the_store(db):
    ensure_people()
    acme, globex = Tenant.objects.get(slug="acme"), Tenant.objects.get(slug="globex")
    assert (acme.four_eyes_critical, globex.four_eyes_critical) == (False, True)
    label = Actor.system("demo").label
    assert events(acme) == [("tenant.created", label, None, {"name": "Acme Robotics"})]
    assert events(globex) == [
        ("tenant.created", label, None, {"name": "Globex Payments"}),
        (
            "tenant.settings_changed",
            label,
            {"four_eyes_critical": False},
            {"four_eyes_critical": True},
        ),
    ]
    for tenant in (acme, globex):
        with in_tenant(tenant):
            assert verify_chain(tenant) is None

    ensure_people()  # again: nothing new to create or switch, nothing audited
    assert len(events(globex)) == 2


def test_a_demo_tenant_whose_four_eyes_was_switched_off_gets_it_back_audited(db):
    ensure_people()
    globex = Tenant.objects.get(slug="globex")
    with in_tenant(globex):
        TenancyStore(globex, Actor.system("test")).set_four_eyes(on=False)
    ensure_people()
    globex.refresh_from_db()
    assert globex.four_eyes_critical is True
    assert [e[3] for e in events(globex)][-2:] == [
        {"four_eyes_critical": False},
        {"four_eyes_critical": True},
    ]


def test_create_tenant_refuses_a_taken_slug(db):
    TenancyStore.create_tenant(slug="initech", name="Initech", actor=Actor.system("test"))
    with pytest.raises(Conflict, match="already exists"):
        TenancyStore.create_tenant(slug="initech", actor=Actor.system("test"))
    assert Tenant.objects.filter(slug="initech").count() == 1


def test_the_create_tenant_command_goes_through_the_store(db, capsys):
    call_command("create_tenant", "initech", "--name", "Initech")
    assert "Created tenant initech." in capsys.readouterr().out
    tenant = Tenant.objects.get(slug="initech")
    label = Actor.system("manage.py create_tenant").label
    assert events(tenant) == [("tenant.created", label, None, {"name": "Initech"})]
    with pytest.raises(CommandError, match="Tenant 'initech' already exists"):
        call_command("create_tenant", "initech")
