"""Talking to a tenant's provider: discovery, JWKS, token, refresh, userinfo.

Every URL is tenant-chosen (the issuer) or provider-chosen (its endpoints), so
every call goes through `stateroom.egress.request`: the name is resolved once and
refused unless every address is public (or STATEROOM_WEBHOOK_ALLOW lists it), and
the connection goes to the address that was checked (Host header and SNI carry
the name; no redirects), so DNS cannot answer differently in between. The
backend's calls (mozilla-django-oidc's token, JWKS, userinfo) come here too.
Signatures and claims are checked by PyJWT (backend.py); nothing here does
cryptography.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from django.conf import settings
from django.core.exceptions import SuspiciousOperation

from stateroom import egress

DISCOVERY_PATH = "/.well-known/openid-configuration"
ENDPOINTS = ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")


@dataclass(frozen=True)
class Provider:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str


class Refused(Exception):
    """The provider no longer vouches for this session (token revoked, expired, refused)."""


# What a call to a provider may raise: unreachable, unsafe, refused, or not JSON.
FAILURES = (httpx.HTTPError, egress.UnsafeDestination, Refused, ValueError)


def get(url: str, *, headers: dict[str, str] | None = None) -> httpx.Response:
    return egress.request("GET", url, headers=headers, timeout=settings.OIDC_TIMEOUT)


def post(url: str, *, data: dict[str, str]) -> httpx.Response:
    return egress.request("POST", url, data=data, timeout=settings.OIDC_TIMEOUT)


def discover(issuer: str) -> Provider:
    """The provider's metadata; its `issuer` must be the configured one (no mix-up)."""
    response = get(issuer.rstrip("/") + DISCOVERY_PATH)
    response.raise_for_status()
    meta = response.json()
    if meta.get("issuer") != issuer:
        raise SuspiciousOperation("The provider's discovery names another issuer.")
    missing = [name for name in ENDPOINTS if not meta.get(name)]
    if missing:
        raise SuspiciousOperation(f"The provider's discovery lacks {', '.join(missing)}.")
    return Provider(issuer, *(meta[name] for name in ENDPOINTS))


def jwks(uri: str) -> dict:
    response = get(uri)
    response.raise_for_status()
    return response.json()


def token(token_endpoint: str, data: dict[str, str]) -> dict:
    """The token endpoint's answer to `data` (a code or a refresh token); Refused if 4xx."""
    response = post(token_endpoint, data=data)
    if response.status_code in (400, 401, 403):
        raise Refused(f"the token endpoint answered {response.status_code}")
    response.raise_for_status()
    return response.json()


def userinfo(provider: Provider, access_token: str) -> dict:
    response = get(provider.userinfo_endpoint, headers={"Authorization": f"Bearer {access_token}"})
    if response.status_code in (400, 401, 403):
        raise Refused(f"userinfo answered {response.status_code}")
    response.raise_for_status()
    return response.json()


def refresh(provider: Provider, client_id: str, secret: str, refresh_token: str) -> dict:
    return token(
        provider.token_endpoint,
        {
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": client_id,
            "client_secret": secret,
        },
    )
