"""Console login: lockout after wrong passwords (per username and address together), and TOTP."""

from __future__ import annotations

import io
import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

from audit_app.models import AuditEvent
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant
from tests.conftest import PASSWORD, login


def log_in(client: Client, username: str, password: str, ip: str = "203.0.113.7"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=ip)


def actions(tenant) -> list[tuple[str, str]]:
    with in_tenant(tenant):
        return list(
            AuditEvent.objects.filter(tenant=tenant)
            .exclude(action="access.denied")
            .order_by("seq")
            .values_list("action", "target_id")
        )


def test_twenty_wrong_passwords_lock_the_user_out_until_an_admin_lifts_it(
    tenant_a, operator_a, admin_a
):
    client = Client()
    statuses = [log_in(client, "otto", "wrong-password").status_code for _ in range(20)]
    assert statuses[:9] == [200] * 9  # the form again, with an error
    assert set(statuses[9:]) == {429}
    locked = log_in(client, "otto", PASSWORD)  # the right password does not help now
    assert locked.status_code == 429
    assert 'data-testid="locked-out"' in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # The lockout is the username's from that address: elsewhere otto still gets in.
    assert log_in(Client(), "otto", PASSWORD, ip="198.51.100.9").status_code == 302
    assert ("user.locked_out", str(operator_a.pk)) in actions(tenant_a)

    admin = login(admin_a)
    lifted = admin.post(f"/t/acme/settings/members/{operator_a.pk}/unlock", follow=True)
    assert "Login lockout lifted." in lifted.content.decode()
    assert actions(tenant_a)[-1] == ("member.unlocked", str(operator_a.pk))
    assert log_in(Client(), "otto", PASSWORD).status_code == 302


def test_wrong_passwords_on_made_up_usernames_lock_out_nobody_else(tenant_a, operator_a, admin_a):
    """Behind an untrusted proxy every client has its address: one guesser locks no one out."""
    client = Client()
    for n in range(30):
        assert log_in(client, f"nobody{n}", "wrong-password", ip="192.0.2.66").status_code == 200
    # Ten more on one made-up name lock that name (from that address) only.
    statuses = [log_in(client, "nobody", "x", ip="192.0.2.66").status_code for _ in range(11)]
    assert statuses[-1] == 429
    # Every real user behind the same address, the admin included, still gets in.
    assert log_in(Client(), "otto", PASSWORD, ip="192.0.2.66").status_code == 302
    assert log_in(Client(), "ada", PASSWORD, ip="192.0.2.66").status_code == 302


def seconds_pass(device: TOTPDevice, seconds: int = 60) -> None:
    """The device throttles after a wrong code; move its last failure into the past."""
    TOTPDevice.objects.filter(pk=device.pk).update(
        throttling_failure_timestamp=timezone.now() - timedelta(seconds=seconds)
    )


def code_for(device: TOTPDevice, *, steps_ahead: int = 0) -> str:
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time() + steps_ahead * device.step
    return f"{totp.token():0{device.digits}d}"


@pytest.fixture
def requires_2fa(tenant_a):
    Tenant.objects.filter(pk=tenant_a.pk).update(require_2fa=True)
    return tenant_a


def test_with_totp_required_an_operator_cannot_reach_the_console_without_it(
    requires_2fa, operator_a
):
    client = Client()
    assert log_in(client, "otto", PASSWORD).status_code == 302
    first = client.get("/t/acme/")
    assert first.status_code == 302
    assert first["Location"] == "/2fa/setup/?next=%2Ft%2Facme%2F"
    for page in ("/t/acme/approvals/", "/t/acme/sessions/", "/t/acme/settings/"):
        assert client.get(page).status_code == 302, page
    setup = client.get(first["Location"])
    assert 'data-testid="totp-key"' in setup.content.decode()
    device = TOTPDevice.objects.get(user=operator_a)
    assert device.confirmed is False
    refused = client.post("/2fa/setup/", {"token": "000000", "next": "/t/acme/"})
    assert refused.status_code == 422
    assert client.get("/t/acme/").status_code == 302
    seconds_pass(device)
    confirmed = client.post("/2fa/setup/", {"token": code_for(device), "next": "/t/acme/"})
    assert (confirmed.status_code, confirmed["Location"]) == (302, "/t/acme/")
    assert client.get("/t/acme/").status_code == 200
    assert ("user.second_factor_added", str(operator_a.pk)) in actions(requires_2fa)

    # The next login asks for the code, and a wrong one does not pass.
    again = Client()
    assert log_in(again, "otto", PASSWORD).status_code == 302
    ask = again.get("/t/acme/runs/")
    assert ask["Location"] == "/2fa/?next=%2Ft%2Facme%2Fruns%2F"
    assert again.post("/2fa/", {"token": "123456", "next": "/t/acme/runs/"}).status_code == 422
    assert again.get("/t/acme/runs/").status_code == 302
    seconds_pass(device)
    device.refresh_from_db()
    passed = again.post(
        "/2fa/", {"token": code_for(device, steps_ahead=1), "next": "/t/acme/runs/"}
    )
    assert (passed.status_code, passed["Location"]) == (302, "/t/acme/runs/")
    assert again.get("/t/acme/runs/").status_code == 200


def test_support_is_not_asked_and_the_setting_is_audited(tenant_a, admin_a, support_a):
    admin = login(admin_a)
    admin.post("/t/acme/settings/two-factor", {"on": "on"})
    assert Tenant.objects.get(pk=tenant_a.pk).require_2fa is True
    assert actions(tenant_a)[-1] == ("tenant.settings_changed", "acme")
    with in_tenant(tenant_a):
        event = AuditEvent.objects.filter(tenant=tenant_a).order_by("-seq").first()
    assert (event.before, event.after) == ({"require_2fa": False}, {"require_2fa": True})
    assert login(support_a).get("/t/acme/").status_code == 200
    assert admin.get("/t/acme/").status_code == 302  # the admin now needs it too


def test_a_user_with_a_device_is_asked_even_where_it_is_not_required(tenant_a, support_a):
    TOTPDevice.objects.create(user=support_a, name="app", confirmed=True)
    client = Client()
    log_in(client, "sue", PASSWORD)
    assert client.get("/t/acme/")["Location"] == "/2fa/?next=%2Ft%2Facme%2F"


def deploy_warnings() -> list[str]:
    from django.core.checks import run_checks

    return [
        m.id for m in run_checks(include_deployment_checks=True) if m.id.startswith("stateroom")
    ]


def test_check_deploy_warns_when_requests_come_through_an_untrusted_proxy(db, settings):
    from django.core.cache import cache
    from django.core.management import call_command

    from audit_app.models import SecurityNotice

    cache.delete("security-notice:forwarded_for_untrusted")
    settings.STATEROOM_TRUSTED_PROXY_COUNT = 0
    assert Client().get("/login/", REMOTE_ADDR="10.0.0.5").status_code == 200
    assert deploy_warnings() == []  # no proxy seen, nothing to say
    headers = {"X-Forwarded-For": "203.0.113.7"}
    assert Client(headers=headers).get("/login/", REMOTE_ADDR="10.0.0.5").status_code == 200
    notice = SecurityNotice.objects.get()
    assert (notice.key, notice.detail) == ("forwarded_for_untrusted", {"remote_addr": "10.0.0.5"})
    assert deploy_warnings() == ["stateroom.W001"]
    err = io.StringIO()
    call_command("check", "--deploy", "--tag", "security", stderr=err, stdout=io.StringIO())
    assert "(stateroom.W001) Requests arrived with an X-Forwarded-For header" in err.getvalue()
    assert "STATEROOM_TRUSTED_PROXY_COUNT is 0: every client has the proxy's address." in (
        err.getvalue()
    )
    # Once the proxy is trusted the check is quiet, and such requests note nothing new.
    settings.STATEROOM_TRUSTED_PROXY_COUNT = 1
    assert deploy_warnings() == []
    SecurityNotice.objects.all().delete()
    cache.delete("security-notice:forwarded_for_untrusted")
    Client(headers=headers).get("/login/", REMOTE_ADDR="10.0.0.5")
    assert not SecurityNotice.objects.exists()
