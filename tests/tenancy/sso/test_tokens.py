"""The ID token checks, on real tokens of the two stand-in providers."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import replace
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from django.core.exceptions import SuspiciousOperation

from tenancy_app.scoping import in_tenant
from tenancy_app.sso import provider as op
from tenancy_app.sso.backend import Flow, TenantOIDCBackend
from tenancy_app.sso.store import SsoStore
from tests.tenancy.sso.conftest import SECRET_A

CLIENT = "stateroom-a"


def id_token_from(provider, live_server, username: str, nonce: str) -> str:
    """A real ID token for `username`, through the provider's login, authorize and token
    endpoints (code + PKCE), as a browser and Stateroom would get it."""
    http = requests.Session()
    http.get(f"{provider.url}/login/")
    http.post(
        f"{provider.url}/login/",
        data={
            "username": username,
            "password": provider.password(username),
            "csrfmiddlewaretoken": http.cookies["op_csrf"],
            "next": "/",
        },
    )
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    redirect_uri = f"{live_server.url}/login/sso/callback/"
    query = {
        "response_type": "code",
        "client_id": CLIENT,
        "redirect_uri": redirect_uri,
        "scope": "openid email",
        "state": "s",
        "nonce": nonce,
        "code_challenge": challenge.decode().rstrip("="),
        "code_challenge_method": "S256",
    }
    answer = http.get(f"{provider.issuer}/authorize/?{urlencode(query)}", allow_redirects=False)
    code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    token = requests.post(
        f"{provider.issuer}/token/",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": CLIENT,
            "client_secret": SECRET_A,
            "code_verifier": verifier,
        },
    )
    token.raise_for_status()
    return token.json()["id_token"]


@pytest.fixture
def backend_a(tenant_a, sso_a, p1):
    backend = TenantOIDCBackend()
    with in_tenant(tenant_a):
        config = SsoStore(tenant_a, None).config()
    backend.use(Flow(tenant_a, config, op.discover(p1.issuer), SECRET_A))
    return backend


def test_a_token_of_the_configured_provider_passes(backend_a, p1, live_server):
    claims = backend_a.verify_token(id_token_from(p1, live_server, "olga", "n1"), nonce="n1")
    assert claims["iss"] == p1.issuer and claims["aud"] == CLIENT
    assert claims["groups"] == ["sr-operators"]


def test_a_token_from_another_issuer_is_refused(backend_a, p2, live_server):
    # Same client id at P2: only its issuer and its signing key differ.
    token = id_token_from(p2, live_server, "olga", "n1")
    with pytest.raises(SuspiciousOperation):
        backend_a.verify_token(token, nonce="n1")


def test_a_token_naming_another_issuer_than_the_configured_one_is_refused(
    backend_a, p1, p2, live_server
):
    # The key matches (P1's JWKS) but the tenant trusts another issuer.
    backend_a.flow.provider = replace(backend_a.flow.provider, issuer=p2.issuer)
    with pytest.raises(SuspiciousOperation, match="issuer"):
        backend_a.verify_token(id_token_from(p1, live_server, "olga", "n1"), nonce="n1")


def test_another_audience_or_nonce_is_refused(backend_a, p1, live_server):
    token = id_token_from(p1, live_server, "olga", "n1")
    with pytest.raises(SuspiciousOperation, match="Nonce"):
        backend_a.verify_token(token, nonce="another")
    backend_a.OIDC_RP_CLIENT_ID = "stateroom-b"
    with pytest.raises(SuspiciousOperation, match="Audience"):
        backend_a.verify_token(token, nonce="n1")


def test_discovery_that_names_another_issuer_is_refused(p1, allow_loopback):
    with pytest.raises(SuspiciousOperation):
        op.discover(p1.issuer + "/")  # the document says .../o, not .../o/


def test_a_private_issuer_is_refused_unless_allowed(p1):
    with pytest.raises(op.egress.UnsafeDestination):
        op.discover(p1.issuer)
