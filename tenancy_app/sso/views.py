"""Sign-in through a tenant's provider: mozilla-django-oidc's views, per tenant.

- `/login/sso/<slug>/`: the "Sign in with <provider>" page (the login page's
  company sign-in form leads here; so does a tenant that requires SSO).
- `/login/sso/<slug>/start/`: the library's authorization request (code + PKCE,
  state, nonce) to the tenant's provider; the state entry remembers the tenant.
- `/login/sso/callback/`: one callback for every tenant; the state entry says
  whose provider answers. An unknown (replayed, forged) or expired state is
  refused before any call to a provider, and so is every failed check after.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlsplit

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.generic import View
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from stateroom.actor import Actor

from ..models import Tenant
from ..scoping import in_tenant
from . import clock, session
from . import provider as op
from .backend import Flow
from .mapping import did_mfa
from .store import SsoStore

logger = logging.getLogger(__name__)
STATES = "oidc_states"  # the library's session key


def _configured(slug: str):
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is not None:
        with in_tenant(tenant):
            config = SsoStore(tenant, Actor.system("sso")).config()
        if config is not None and config.enabled:
            return tenant, config
    raise Http404("No single sign-on here.")


def sso_entry(request):
    """The login page's company sign-in form: its tenant's page."""
    slug = request.GET.get("tenant", "").strip().lower()
    if not slug:
        return redirect("login")
    return redirect("sso-page", slug=slug[:64])


def sso_page(request, slug: str):
    tenant, config = _configured(slug)
    ended = request.GET.get("sso") == "ended"
    return render(
        request, "console/auth/sso.html", {"tenant": tenant, "config": config, "ended": ended}
    )


class SsoStart(OIDCAuthenticationRequestView):
    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)

    def get_settings(self, attr, *args):
        if attr == "OIDC_RP_SCOPES":
            return self.scopes
        return import_from_settings(attr, *args)

    def get(self, request, slug: str):
        tenant, config = _configured(slug)
        try:
            provider = op.discover(config.issuer)
        except (*op.FAILURES, SuspiciousOperation) as exc:
            logger.warning("sso discovery for %s failed: %s", slug, exc)
            return _refused(request, "provider_unreachable", status=502)
        self.OIDC_OP_AUTH_ENDPOINT = provider.authorization_endpoint
        self.OIDC_RP_CLIENT_ID = config.client_id
        self.scopes = config.scopes
        response = super().get(request)
        state = parse_qs(urlsplit(response.url).query)["state"][0]
        entry = request.session[STATES][state]
        entry["tenant"] = tenant.pk
        entry["added_on"] = clock.now()
        request.session.modified = True
        return response


class SsoCallback(OIDCAuthenticationCallbackView):
    def get(self, request):
        state = request.GET.get("state", "")
        entry = request.session.get(STATES, {}).get(state)
        if entry is None or "tenant" not in entry:
            return _refused(request, "unknown_state")
        if clock.now() - entry["added_on"] > settings.STATEROOM_SSO_STATE_MAX_AGE_SECONDS:
            del request.session[STATES][state]
            request.session.modified = True
            return _refused(request, "expired_state", tenant_id=entry["tenant"])
        tenant = Tenant.objects.get(pk=entry["tenant"])
        with in_tenant(tenant):
            config = SsoStore(tenant, Actor.system("sso")).config()
        if config is None or not config.enabled:
            return _refused(request, "not_configured")
        try:
            provider = op.discover(config.issuer)
            request.sso_flow = Flow(tenant, config, provider, SsoStore.client_secret(config))
            return super().get(request)
        except (*op.FAILURES, SuspiciousOperation) as exc:
            logger.warning("sso callback for %s refused: %s", tenant.slug, exc)
            return _refused(request, "token_refused", tenant_id=tenant.pk, detail=str(exc))

    def login_failure(self):
        flow = getattr(self.request, "sso_flow", None)
        reason = (flow.refusal if flow else "") or "provider_refused"
        return _refused(self.request, reason, tenant_id=flow.tenant.pk if flow else None)

    def login_success(self):
        flow = self.request.sso_flow
        super().login_success()  # auth.login: the session is renewed
        mfa = did_mfa(flow.id_claims, flow.config.mfa_acr_values)
        session.remember(self.request, flow, mfa)
        with in_tenant(flow.tenant):
            flow.store.record(
                "sso.login",
                str(self.user.pk),
                role=flow.role,
                sub=str(flow.id_claims["sub"]),
                mfa=mfa,
            )
        return redirect(reverse("tenant-home", args=[flow.tenant.slug]))


def _refused(request, reason: str, *, tenant_id: int | None = None, detail: str = "", status=403):
    """The refusal page; audited `sso.login_refused` in the tenant whose sign-in it was."""
    if tenant_id is not None:
        tenant = Tenant.objects.get(pk=tenant_id)
        with in_tenant(tenant):
            SsoStore(tenant, Actor.system("sso")).record(
                "sso.login_refused", "unknown", reason=reason, detail=detail[:300]
            )
    return render(request, "console/auth/sso_refused.html", {"reason": reason}, status=status)
