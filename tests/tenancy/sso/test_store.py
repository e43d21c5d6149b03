"""The SSO configuration store, the secret at rest, and the group mapping."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet

from audit_app.models import AuditEvent
from stateroom.actor import Actor
from stateroom.errors import Unprocessable
from tenancy_app.models import Role, SsoConfig
from tenancy_app.scoping import in_tenant
from tenancy_app.sso import crypto
from tenancy_app.sso.mapping import did_mfa, groups_of, member_groups_for, role_for
from tenancy_app.sso.store import SsoStore

ISSUER = "https://id.example.com/o"


@pytest.fixture
def store(tenant_a, stub_dns):
    stub_dns.table["id.example.com"] = ["93.184.216.34"]
    with in_tenant(tenant_a):
        yield SsoStore(tenant_a, Actor.system("t"))


def test_the_secret_is_encrypted_at_rest_and_never_audited(store, tenant_a):
    store.save_config(
        issuer=ISSUER, client_id="c", client_secret="s3cret-value", role_map={}, require_sso=True
    )
    row = SsoConfig.objects.get(tenant=tenant_a)
    assert "s3cret-value" not in row.client_secret
    assert SsoStore.client_secret(row) == "s3cret-value"
    event = AuditEvent.objects.get(tenant=tenant_a, action="sso.config_changed")
    assert "s3cret-value" not in str(event.after)
    assert event.after["client_credentials_replaced"] is True and event.after["require_sso"] is True
    # An empty secret on a later save keeps the stored one.
    store.save_config(require_sso=False, client_id="c2")
    assert SsoStore.client_secret(SsoConfig.objects.get(tenant=tenant_a)) == "s3cret-value"


def test_a_key_of_its_own_and_rotation(settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.STATEROOM_SECRETS_KEY = old
    stored = crypto.encrypt("x")
    settings.STATEROOM_SECRETS_KEY = f"{new},{old}"
    assert crypto.decrypt(stored) == "x"
    settings.STATEROOM_SECRETS_KEY = new
    with pytest.raises(crypto.InvalidToken):
        crypto.decrypt(stored)


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"issuer": "http://10.0.0.5/o"}, "issuer"),
        ({"issuer": "ftp://id.example.com"}, "issuer"),
        ({"role_map": {"g": "owner"}}, "role_map"),
        ({"group_map": {"g": "no-such-group"}}, "group_map"),
        ({"client_id": ""}, "client_id"),
    ],
)
def test_invalid_settings_are_refused(store, fields, field):
    values = {"issuer": ISSUER, "client_id": "c", "client_secret": "s", "require_sso": False}
    with pytest.raises(Unprocessable) as refused:
        store.save_config(**{**values, **fields})
    assert field in refused.value.details


def test_the_highest_mapped_role_wins():
    role_map = {"ops": Role.OPERATOR, "admins": Role.ADMIN, "help": Role.SUPPORT}
    assert role_for(["help", "admins", "ops"], role_map) == Role.ADMIN
    assert role_for(["help"], role_map) == Role.SUPPORT
    assert role_for(["marketing"], role_map) is None
    assert groups_of({"groups": "ops, help"}, "groups") == ["ops", "help"]
    assert groups_of({"groups": 3}, "groups") == []
    assert member_groups_for(["ops", "x"], {"ops": "payments"}) == {"payments"}


def test_what_counts_as_mfa():
    assert did_mfa({"amr": ["pwd", "otp"]}, [])
    assert did_mfa({"amr": ["hwk"]}, [])
    assert not did_mfa({"amr": ["pwd"]}, [])
    assert did_mfa({"acr": "gold"}, ["gold"])
    assert not did_mfa({"acr": "bronze"}, ["gold"])
