"""Webhook URLs that would reach inside (SSRF) are refused when saved and when used.

A stub resolver answers the DNS and a stub transport stands for the network,
both recording what was asked of them: no test opens a connection to any of
these addresses.
"""

from __future__ import annotations

import httpx
import pytest

from approvals_app.tasks import notify_decision
from stateroom import egress
from stateroom.actor import Actor
from stateroom.errors import Unprocessable
from tenancy_app.models import RuntimeToken
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore
from tests.approvals.conftest import approval_store, make_approval
from tests.conftest import login

PRIVATE_URLS = [
    "http://10.0.0.1/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://db.internal.example/hook",  # a host name in a private range
    "http://localhost:8080/hook",
    "http://127.0.0.2/hook",
    "http://[::1]/hook",
    "http://[::ffff:10.0.0.1]/hook",
    "http://100.64.0.1/hook",  # carrier-grade NAT, not public
    "http://0.0.0.0/hook",
]


class RecordingTransport(httpx.BaseTransport):
    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(204)


@pytest.fixture
def transport(monkeypatch) -> RecordingTransport:
    recording = RecordingTransport()
    monkeypatch.setattr(egress, "TRANSPORT", recording)
    return recording


@pytest.fixture
def dns(stub_dns):
    stub_dns.table["db.internal.example"] = ["10.20.30.40"]
    return stub_dns


def create_token(tenant, url: str):
    with in_tenant(tenant):
        return TenancyStore(tenant, Actor.system("test")).create_token(
            name="hooked", webhook_url=url
        )


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_private_loopback_and_link_local_urls_are_refused_at_save(tenant_a, dns, url):
    with pytest.raises(Unprocessable) as refused:
        create_token(tenant_a, url)
    assert refused.value.code == "unsafe_webhook_url"
    assert "not a public address" in refused.value.message
    with in_tenant(tenant_a):
        assert not RuntimeToken.objects.exists()


def test_the_console_says_why_and_saves_nothing(tenant_a, admin_a, dns):
    client = login(admin_a)
    response = client.post(
        "/t/acme/settings/tokens/",
        {"name": "hooked", "webhook_url": "http://db.internal.example/hook"},
        follow=True,
    )
    assert "resolves to 10.20.30.40, which is not a public address" in response.content.decode()
    assert dns.lookups == ["db.internal.example"]
    with in_tenant(tenant_a):
        assert not RuntimeToken.objects.exists()


def test_a_name_that_does_not_resolve_is_refused(tenant_a, dns):
    with pytest.raises(Unprocessable, match="does not resolve"):
        create_token(tenant_a, "https://nowhere.example/hook")


def test_allow_listed_networks_and_names_may_be_private(tenant_a, dns, settings):
    settings.STATEROOM_WEBHOOK_ALLOW = ["10.0.0.0/8", "db.internal.example"]
    token, _ = create_token(tenant_a, "http://10.0.0.1/hook")
    assert token.webhook_url == "http://10.0.0.1/hook"
    assert egress.check_url("http://db.internal.example/x").address == "10.20.30.40"
    with pytest.raises(egress.UnsafeDestination):
        egress.check_url("http://169.254.169.254/")


def decided_approval(tenant, operator) -> None:
    with in_tenant(tenant):
        token = RuntimeToken.objects.get(name="hooked")
    make_approval(tenant, approval_id="apr-1", actor=Actor("token", str(token.pk), "token:hooked"))
    with in_tenant(tenant):
        approval_store(tenant, Actor.for_user(operator)).decide(
            approval_id="apr-1", decision="approve"
        )


def test_a_public_destination_gets_the_post_at_the_checked_address(
    tenant_a, operator_a, dns, transport
):
    create_token(tenant_a, "https://hooks.example/stateroom?x=1")
    decided_approval(tenant_a, operator_a)
    assert notify_decision.delay(tenant_a.pk, "apr-1").get() == "delivered"
    [request] = transport.requests
    assert str(request.url) == "https://93.184.215.14/stateroom?x=1"
    assert request.headers["Host"] == "hooks.example"
    assert request.extensions["sni_hostname"] == "hooks.example"
    assert request.headers["webhook-signature"].startswith("v1,")


def test_dns_that_turns_private_after_the_save_is_refused_at_send(
    tenant_a, operator_a, dns, transport
):
    create_token(tenant_a, "https://hooks.example/stateroom")
    decided_approval(tenant_a, operator_a)
    dns.table["hooks.example"] = ["169.254.169.254"]  # rebinding to the metadata service
    assert notify_decision.delay(tenant_a.pk, "apr-1").get() == "refused:unsafe-destination"
    assert transport.requests == []
    assert dns.lookups[-1] == "hooks.example"


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_urls_stored_before_the_check_are_refused_at_send(
    tenant_a, operator_a, dns, transport, url
):
    create_token(tenant_a, "https://hooks.example/stateroom")
    with in_tenant(tenant_a):  # a row from before save-time checks existed
        RuntimeToken.objects.filter(name="hooked").update(webhook_url=url)
    decided_approval(tenant_a, operator_a)
    assert notify_decision.delay(tenant_a.pk, "apr-1").get() == "refused:unsafe-destination"
    assert transport.requests == []


def test_a_get_or_form_post_goes_to_the_checked_address_without_following_redirects(
    dns, monkeypatch
):
    class Redirecting(RecordingTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            self.requests.append(request)
            return httpx.Response(302, headers={"Location": "http://169.254.169.254/"})

    network = Redirecting()
    monkeypatch.setattr(egress, "TRANSPORT", network)
    answer = egress.request("GET", "https://hooks.example:8443/a?b=1", timeout=1)
    assert answer.status_code == 302  # returned as is, not followed
    egress.request("POST", "http://hooks.example/t", data={"grant": "x y"}, timeout=1)
    get, post = network.requests
    assert str(get.url) == "https://93.184.215.14:8443/a?b=1"
    assert get.headers["Host"] == "hooks.example:8443"
    assert get.extensions["sni_hostname"] == "hooks.example"
    assert str(post.url) == "http://93.184.215.14/t" and post.headers["Host"] == "hooks.example"
    assert post.content == b"grant=x+y" and "sni_hostname" not in post.extensions
    assert dns.lookups == ["hooks.example", "hooks.example"]  # once per request
    dns.table["hooks.example"] = ["10.0.0.1"]
    with pytest.raises(egress.UnsafeDestination):
        egress.request("GET", "https://hooks.example/", timeout=1)
    assert len(network.requests) == 2
