"""What a session signed in through a tenant's provider remembers, and what it gates.

- `remember`: after the callback logs the user in (tokens Fernet-encrypted).
- `gate`: asked by TenantMiddleware for every console page of a tenant: re-checks
  the member's groups with the provider once `STATEROOM_SSO_RECHECK_SECONDS` have
  passed (userinfo with the access token; a refresh when that is refused), and
  keeps password sessions out of a tenant that requires SSO (but its admins: the
  break-glass local accounts).
- `mfa_done`: the provider's `amr`/`acr` said MFA: Stateroom's TOTP is not asked.
"""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import logout
from django.shortcuts import redirect
from django.urls import reverse

from stateroom.actor import Actor

from ..models import Membership, Role, Tenant
from ..scoping import in_tenant
from . import clock, crypto
from . import provider as op
from .store import SsoStore

logger = logging.getLogger(__name__)

KEY = "_stateroom_sso"


def remember(request, flow, mfa: bool) -> None:
    request.session[KEY] = {
        "tenant": flow.tenant.pk,
        "slug": flow.tenant.slug,
        "iss": flow.provider.issuer,
        "sub": str(flow.id_claims.get("sub", "")),
        "mfa": mfa,
        "checked": clock.now(),
        "access": crypto.encrypt(flow.tokens.get("access") or ""),
        "refresh": crypto.encrypt(flow.tokens.get("refresh") or ""),
    }


def signed_in(request, tenant_id: int) -> dict | None:
    info = request.session.get(KEY)
    return info if info and info.get("tenant") == tenant_id else None


def mfa_done(request, tenant_id: int) -> bool:
    info = signed_in(request, tenant_id)
    return bool(info and info.get("mfa"))


def gate(request, membership: Membership):
    """None to go on, or the response that stops the request (before any tenant data)."""
    tenant = membership.tenant
    info = signed_in(request, tenant.pk)
    if info is None:
        if tenant.require_sso and membership.role != Role.ADMIN:
            return redirect(reverse("sso-page", args=[tenant.slug]))
        return None
    if clock.now() - info["checked"] < settings.STATEROOM_SSO_RECHECK_SECONDS:
        return None
    role = recheck(request, tenant, info)
    if role is None:
        logout(request)
        return redirect(reverse("sso-page", args=[tenant.slug]) + "?" + urlencode({"sso": "ended"}))
    membership.role = role
    return None


def recheck(request, tenant: Tenant, info: dict) -> str | None:
    """The role the provider's groups grant now (applied, audited); None: none at all."""
    store = SsoStore(tenant, Actor.for_user(request.user))
    with in_tenant(tenant):
        config = store.config()
    if config is None or not config.enabled:
        return None
    try:
        claims = _claims_now(config, info)
    except op.FAILURES as exc:
        logger.info("sso re-check of user %s refused: %s", request.user.pk, exc)
        with in_tenant(tenant):
            store.record("sso.session_ended", str(request.user.pk), reason=str(exc)[:200])
        return None
    with in_tenant(tenant):
        role = store.apply_claims(request.user, claims, config)
    info["checked"] = clock.now()
    request.session[KEY] = info
    return role


def _claims_now(config, info: dict) -> dict:
    provider = op.discover(config.issuer)
    secret = SsoStore.client_secret(config)
    access = crypto.decrypt(info["access"])
    try:
        claims = op.userinfo(provider, access)
    except op.Refused:
        refresh_token = crypto.decrypt(info["refresh"])
        if not refresh_token:
            raise
        answer = op.refresh(provider, config.client_id, secret, refresh_token)
        info["access"] = crypto.encrypt(answer["access_token"])
        if answer.get("refresh_token"):
            info["refresh"] = crypto.encrypt(answer["refresh_token"])
        claims = op.userinfo(provider, answer["access_token"])
    if str(claims.get("sub")) != info["sub"]:
        raise op.Refused("userinfo speaks of another subject")
    return claims
