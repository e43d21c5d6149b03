"""Every call to a tenant's provider goes to the address stateroom.egress checked.

The issuer is tenant-chosen and its endpoints provider-chosen: a name that
answers a public address to the check and a private one to the connection
(DNS rebinding) must not reach inside. Here a provider on https://id.example is
played by an httpx transport (the network: it records every request and opens
no connection) and the DNS by a resolver that "rebinds" right after each answer.
The calls are the ones a sign-in and a re-check make: discovery, the library's
token, JWKS and userinfo (backend.py), and the re-check's userinfo and refresh.
"""

from __future__ import annotations

import json
import time
from urllib.parse import parse_qs

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from stateroom import egress
from tenancy_app.models import SsoConfig
from tenancy_app.sso import crypto, session
from tenancy_app.sso import provider as op
from tenancy_app.sso.backend import Flow, TenantOIDCBackend

PUBLIC = "93.184.215.20"
ISSUER = "https://id.example/o"
CLIENT = "stateroom-a"


class RebindingResolver:
    """Answers the public address to a lookup, then the metadata service's to the next
    one, until `rearm()`: what an attacker's DNS with a zero TTL does."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names
        self.lookups: list[str] = []
        self.armed = True

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self.names:
            raise OSError(f"{host} does not resolve")
        answer = self.names[host] if self.armed else "169.254.169.254"
        self.armed = False
        return [answer]

    def rearm(self) -> None:
        self.armed = True


class StandInProvider(httpx.BaseTransport):
    """An OpenID provider answering by path, whatever address it is reached at; it
    records each request, then re-arms the resolver (the next call's check sees the
    public address again)."""

    def __init__(self, resolver: RebindingResolver) -> None:
        self.resolver = resolver
        self.requests: list[httpx.Request] = []
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.endpoints: dict[str, str] = {}
        self.revoked: set[str] = set()
        self.groups = ["sr-operators"]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        self.resolver.rearm()
        issuer = f"https://{request.headers['Host']}/o"
        path = request.url.path
        if path == "/o/.well-known/openid-configuration":
            return httpx.Response(200, json=self.discovery(issuer))
        if path == "/o/jwks/":
            jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
            return httpx.Response(200, json={"keys": [{**jwk, "kid": "k1", "alg": "RS256"}]})
        if path == "/o/token/":
            return self.token(issuer, parse_qs(request.content.decode()))
        if path == "/o/userinfo/":
            bearer = request.headers.get("Authorization", "").removeprefix("Bearer ")
            if bearer in self.revoked or not bearer.startswith("at"):
                return httpx.Response(401)
            return httpx.Response(200, json={"sub": "olga-sub", "groups": self.groups})
        if path == "/o/moved/":
            return httpx.Response(302, headers={"Location": "http://169.254.169.254/latest/"})
        return httpx.Response(404)

    def discovery(self, issuer: str) -> dict:
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize/",
            "token_endpoint": f"{issuer}/token/",
            "jwks_uri": f"{issuer}/jwks/",
            "userinfo_endpoint": f"{issuer}/userinfo/",
            **self.endpoints,
        }

    def token(self, issuer: str, form: dict[str, list[str]]) -> httpx.Response:
        grant = form["grant_type"][0]
        if grant == "authorization_code" and form["code"] == ["c1"]:
            now = int(time.time())
            claims = {"iss": issuer, "aud": CLIENT, "sub": "olga-sub", "nonce": "n1"}
            id_token = jwt.encode(
                {**claims, "iat": now, "exp": now + 300},
                self.key,
                algorithm="RS256",
                headers={"kid": "k1"},
            )
            return httpx.Response(
                200, json={"access_token": "at1", "refresh_token": "rt1", "id_token": id_token}
            )
        if grant == "refresh_token" and form["refresh_token"] == ["rt1"]:
            return httpx.Response(200, json={"access_token": "at2", "refresh_token": "rt2"})
        return httpx.Response(400, json={"error": "invalid_grant"})


@pytest.fixture
def resolver(monkeypatch) -> RebindingResolver:
    answers = RebindingResolver({"id.example": PUBLIC, "id.internal.example": "10.1.2.3"})
    monkeypatch.setattr(egress, "RESOLVER", answers)
    return answers


@pytest.fixture
def stand_in(resolver, monkeypatch) -> StandInProvider:
    network = StandInProvider(resolver)
    monkeypatch.setattr(egress, "TRANSPORT", network)
    return network


def config_of(tenant) -> SsoConfig:
    return SsoConfig(
        tenant=tenant,
        issuer=ISSUER,
        client_id=CLIENT,
        client_secret=crypto.encrypt("s3cret"),
        enabled=True,
    )


def signed_in_backend(tenant) -> TenantOIDCBackend:
    backend = TenantOIDCBackend()
    backend.use(Flow(tenant, config_of(tenant), op.discover(ISSUER), "s3cret"))
    return backend


def test_every_call_of_a_sign_in_and_a_recheck_goes_to_the_checked_address(
    tenant_a, stand_in, resolver
):
    backend = signed_in_backend(tenant_a)  # discovery
    tokens = backend.get_token({"grant_type": "authorization_code", "code": "c1"})
    payload = backend.verify_token(tokens["id_token"], nonce="n1")  # the JWKS
    claims = backend.get_userinfo(tokens["access_token"], tokens["id_token"], payload)
    assert claims["groups"] == ["sr-operators"] and backend.flow.tokens["refresh"] == "rt1"
    # The re-check: at1 revoked, so userinfo refuses it and the refresh token is used.
    stand_in.revoked.add("at1")
    info = {"sub": "olga-sub", "access": crypto.encrypt("at1"), "refresh": crypto.encrypt("rt1")}
    assert session._claims_now(config_of(tenant_a), info)["sub"] == "olga-sub"
    assert crypto.decrypt(info["access"]) == "at2" and crypto.decrypt(info["refresh"]) == "rt2"

    asked = [(r.method, r.url.path) for r in stand_in.requests]
    assert asked == [
        ("GET", "/o/.well-known/openid-configuration"),
        ("POST", "/o/token/"),
        ("GET", "/o/jwks/"),
        ("GET", "/o/userinfo/"),
        ("GET", "/o/.well-known/openid-configuration"),
        ("GET", "/o/userinfo/"),
        ("POST", "/o/token/"),
        ("GET", "/o/userinfo/"),
    ]
    # Each went to the address its check saw, though a second lookup would have
    # answered 169.254.169.254: the network got an address, not a name to resolve.
    for request in stand_in.requests:
        assert request.url.host == PUBLIC and request.url.scheme == "https"
        assert request.headers["Host"] == "id.example"
        assert request.extensions["sni_hostname"] == "id.example"
    assert resolver.lookups == ["id.example"] * len(stand_in.requests)  # one per call


def test_a_name_that_rebinds_between_calls_is_refused_and_nothing_is_sent(
    tenant_a, stand_in, resolver
):
    provider = op.discover(ISSUER)
    resolver.armed = False  # the next lookup answers the metadata service
    with pytest.raises(egress.UnsafeDestination, match=r"169\.254\.169\.254"):
        op.userinfo(provider, "at1")
    assert [r.url.path for r in stand_in.requests] == ["/o/.well-known/openid-configuration"]


def test_a_private_issuer_is_refused_unless_allow_listed(tenant_a, stand_in, resolver, settings):
    private = "https://id.internal.example/o"
    with pytest.raises(egress.UnsafeDestination, match=r"10\.1\.2\.3"):
        op.discover(private)
    assert stand_in.requests == []
    resolver.rearm()
    settings.STATEROOM_WEBHOOK_ALLOW = ["10.0.0.0/8"]
    assert op.discover(private).token_endpoint == private + "/token/"
    [request] = stand_in.requests
    assert request.url.host == "10.1.2.3" and request.headers["Host"] == "id.internal.example"


@pytest.mark.parametrize("endpoint", ["token_endpoint", "jwks_uri", "userinfo_endpoint"])
def test_a_provider_naming_a_private_endpoint_is_refused_before_any_request(
    tenant_a, stand_in, endpoint
):
    stand_in.endpoints[endpoint] = "http://10.0.0.7/steal"
    backend = signed_in_backend(tenant_a)
    calls = {
        "token_endpoint": lambda: backend.get_token({"grant_type": "authorization_code"}),
        "jwks_uri": lambda: backend.retrieve_matching_jwk(
            jwt.encode({}, "k" * 32, headers={"kid": "k1"})
        ),
        "userinfo_endpoint": lambda: backend.get_userinfo("at1", "", {"sub": "olga-sub"}),
    }
    with pytest.raises(egress.UnsafeDestination, match=r"10\.0\.0\.7"):
        calls[endpoint]()
    assert [r.url.host for r in stand_in.requests] == [PUBLIC]  # the discovery only


def test_a_redirect_is_not_followed(tenant_a, stand_in):
    stand_in.endpoints["userinfo_endpoint"] = f"{ISSUER}/moved/"  # 302 to the metadata
    provider = op.discover(ISSUER)
    with pytest.raises(httpx.HTTPStatusError, match="302"):
        op.userinfo(provider, "at1")
    assert [r.url.host for r in stand_in.requests] == [PUBLIC, PUBLIC]
