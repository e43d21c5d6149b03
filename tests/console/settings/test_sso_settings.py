"""The single sign-on settings page: admins configure their tenant's provider."""

import pytest

from audit_app.models import AuditEvent
from tenancy_app.models import Role, SsoConfig
from tenancy_app.scoping import in_tenant
from tenancy_app.sso.store import SsoStore
from tests.conftest import login
from tests.console.fixtures import queries

PAGE = "/t/acme/settings/sso/"
FORM = {
    "enabled": "on",
    "display_name": "Acme ID",
    "issuer": "https://id.example.com/o",
    "client_id": "stateroom",
    "client_secret": "the-secret",
    "scopes": "openid email profile",
    "groups_claim": "groups",
    "role_map": "sr-ops = operator\nsr-admins = admin\n",
    "group_map": "",
    "mfa_acr_values": "urn:gold",
    "require_sso": "on",
}


@pytest.fixture(autouse=True)
def _id_example_com(stub_dns):
    stub_dns.table["id.example.com"] = ["93.184.216.34"]


def test_an_admin_configures_the_provider(admin_a, tenant_a):
    client = login(admin_a)
    page = client.get(PAGE)
    assert page.status_code == 200
    assert b"/login/sso/callback/" in page.content
    assert client.post(PAGE, FORM).status_code == 302
    with in_tenant(tenant_a):
        config = SsoConfig.objects.get(tenant=tenant_a)
        assert config.role_map == {"sr-ops": "operator", "sr-admins": "admin"}
        assert config.mfa_acr_values == ["urn:gold"]
        assert SsoStore.client_secret(config) == "the-secret"
        assert AuditEvent.objects.filter(tenant=tenant_a, action="sso.config_changed").exists()
    tenant_a.refresh_from_db()
    assert tenant_a.require_sso
    page = client.get(PAGE).content.decode()
    assert "the-secret" not in page and "sr-ops = operator" in page


def test_a_wrong_mapping_is_shown_on_its_field(admin_a, tenant_a):
    client = login(admin_a)
    answer = client.post(PAGE, {**FORM, "role_map": "sr-ops = owner"})
    assert answer.status_code == 422
    assert b'data-field="role_map"' in answer.content
    answer = client.post(PAGE, {**FORM, "role_map": "no equals sign"})
    assert answer.status_code == 422
    with in_tenant(tenant_a):
        assert not SsoConfig.objects.filter(tenant=tenant_a).exists()


def test_only_admins_and_only_their_tenant(make_user, tenant_a, admin_b):
    operator = make_user("oscar", tenant_a, Role.OPERATOR)
    assert login(operator).get(PAGE).status_code == 403
    assert login(admin_b).get(PAGE).status_code == 404
    assert login(admin_b).post(PAGE, FORM).status_code == 404


def test_the_page_query_count(admin_a, tenant_a, django_assert_num_queries):
    client = login(admin_a)
    client.post(PAGE, FORM)
    with django_assert_num_queries(queries(8)):
        assert client.get(PAGE).status_code == 200
