"""Talking to a tenant's provider: discovery, token refresh, userinfo.

Every URL is tenant-chosen (the issuer) or provider-chosen (its endpoints), so
each goes through `stateroom.egress.check_url` first (private addresses refused
unless STATEROOM_WEBHOOK_ALLOW lists them). Signatures and claims are checked by
PyJWT (backend.py); nothing here does cryptography.
"""

from __future__ import annotations

from dataclasses import dataclass

import requests
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


def get(url: str, **kw) -> requests.Response:
    egress.check_url(url)
    return requests.get(url, timeout=settings.OIDC_TIMEOUT, allow_redirects=False, **kw)


def post(url: str, **kw) -> requests.Response:
    egress.check_url(url)
    return requests.post(url, timeout=settings.OIDC_TIMEOUT, allow_redirects=False, **kw)


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


class Refused(Exception):
    """The provider no longer vouches for this session (token revoked, expired, refused)."""


def userinfo(provider: Provider, access_token: str) -> dict:
    response = get(provider.userinfo_endpoint, headers={"Authorization": f"Bearer {access_token}"})
    if response.status_code in (400, 401, 403):
        raise Refused(f"userinfo answered {response.status_code}")
    response.raise_for_status()
    return response.json()


def refresh(provider: Provider, client_id: str, secret: str, refresh_token: str) -> dict:
    response = post(
        provider.token_endpoint,
        data={
            "grant_type": "refresh_token",
            "refresh_token": refresh_token,
            "client_id": client_id,
            "client_secret": secret,
        },
    )
    if response.status_code in (400, 401, 403):
        raise Refused(f"the token endpoint answered {response.status_code}")
    response.raise_for_status()
    return response.json()
