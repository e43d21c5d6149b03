"""My notification preferences: every member edits their own; validation shown."""

from datetime import time

import pytest

from notifications_app.models import Preference
from tenancy_app.scoping import in_tenant
from tests.conftest import login
from tests.console.conftest import layout_queries

PREFS = "/t/acme/preferences/"


@pytest.mark.parametrize("fixture", ["support_a", "operator_a", "admin_a"])
def test_every_member_saves_their_own(request, fixture, tenant_a):
    user = request.getfixturevalue(fixture)
    client = login(user)
    page = client.get(PREFS).content.decode()
    assert 'data-testid="defaults-apply"' in page and "Enable desktop notifications" in page
    response = client.post(
        PREFS,
        {
            "risk_critical": ["email", "slack"],
            "risk_low": ["console"],
            "quiet_start": "22:00",
            "quiet_end": "07:00",
            "time_zone": "Europe/Berlin",
        },
    )
    assert response.status_code == 302
    with in_tenant(tenant_a):
        pref = Preference.objects.get(tenant=tenant_a, user=user)
    assert pref.by_risk == {
        "low": ["console"],
        "medium": [],
        "high": [],
        "critical": ["email", "slack"],
    }
    assert (pref.quiet_start, pref.quiet_end, pref.time_zone) == (
        time(22),
        time(7),
        "Europe/Berlin",
    )
    page = client.get(PREFS).content.decode()
    assert 'value="22:00"' in page and 'value="Europe/Berlin"' in page


def test_validation_errors_are_shown(operator_a, tenant_a):
    client = login(operator_a)
    response = client.post(PREFS, {"quiet_start": "22:00", "time_zone": "Mars/Olympus"})
    assert response.status_code == 422
    body = response.content.decode()
    assert "quiet hours need a start and an end" in body
    assert "an IANA time zone" in body
    with in_tenant(tenant_a):
        assert not Preference.objects.filter(tenant=tenant_a).exists()


def test_a_non_member_gets_404_or_403(admin_b, tenant_a):
    assert login(admin_b).get(PREFS).status_code in (403, 404)


def test_query_count(operator_a, tenant_a, django_assert_num_queries):
    client = login(operator_a)
    with django_assert_num_queries(layout_queries(client, tenant_a) + 1):  # my preference
        client.get(PREFS)
