"""mozilla-django-oidc's authentication backend, per tenant.

The library is settings-based (one provider); here the provider is the one of
the tenant whose sign-in started the flow (`request.sso_flow`, set by the
callback view from the state entry). The backend answers only that callback:
any other `authenticate()` (the password form) passes it by.

The library's own HTTP calls (token, JWKS, userinfo: `requests` straight to the
URL) are replaced by provider.py's, pinned to the address `stateroom.egress`
checked. Added to the library's checks: the ID token's issuer and audience (the library
checks signature, expiry and nonce), userinfo's `sub` must be the ID token's,
and users are found by (tenant, issuer, subject), never by email.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jwt
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.utils.encoding import smart_str
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings

from stateroom.actor import Actor

from ..models import SsoConfig, Tenant
from ..scoping import in_tenant
from . import provider as op
from .mapping import groups_of, role_for
from .store import SsoStore

# Clock skew allowed on exp/iat/nbf.
LEEWAY_SECONDS = 30


@dataclass
class Flow:
    """One sign-in in progress: the tenant, its provider, and what the backend learns."""

    tenant: Tenant
    config: SsoConfig
    provider: op.Provider
    secret: str
    id_claims: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)
    role: str | None = None
    refusal: str = ""

    @property
    def store(self) -> SsoStore:
        return SsoStore(self.tenant, Actor.system("sso"))


class TenantOIDCBackend(OIDCAuthenticationBackend):
    def __init__(self, *args, **kwargs):
        # No settings-wide provider: everything comes from the flow.
        self.UserModel = get_user_model()

    def authenticate(self, request, **kwargs):
        flow = getattr(request, "sso_flow", None) if request is not None else None
        if flow is None or "nonce" not in kwargs:
            return None
        self.use(flow)
        return super().authenticate(request, **kwargs)

    def use(self, flow: Flow) -> None:
        """Check and call the provider of `flow` (the library reads these attributes)."""
        self.flow = flow
        self.OIDC_OP_TOKEN_ENDPOINT = flow.provider.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = flow.provider.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = flow.provider.jwks_uri
        self.OIDC_RP_CLIENT_ID = flow.config.client_id
        self.OIDC_RP_CLIENT_SECRET = flow.secret
        self.OIDC_RP_SIGN_ALGO = "RS256"
        self.OIDC_RP_IDP_SIGN_KEY = None

    # --- the library's HTTP calls, through provider.py (stateroom.egress) ----
    def get_token(self, payload):
        answer = op.token(self.OIDC_OP_TOKEN_ENDPOINT, payload)
        self.flow.tokens["refresh"] = answer.get("refresh_token") or ""
        return answer

    def retrieve_matching_jwk(self, token):
        """The library's key choice (kid, then alg) from the JWKS fetched through egress."""
        header = jwt.get_unverified_header(token)
        verify_kid = import_from_settings("OIDC_VERIFY_KID", True)
        key = None
        for jwk in op.jwks(self.OIDC_OP_JWKS_ENDPOINT).get("keys", []):
            if verify_kid and jwk.get("kid") != smart_str(header.get("kid")):
                continue
            if "alg" in jwk and jwk["alg"] != smart_str(header.get("alg")):
                continue
            key = jwk
        if key is None:
            raise SuspiciousOperation("Could not find a valid JWKS.")
        return jwt.PyJWK(key)

    def _verify_jws(self, payload, key):
        """Signature (the library's JWKS key), and issuer, audience, expiry: all required."""
        if jwt.get_unverified_header(payload).get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise SuspiciousOperation("The ID token is not signed with RS256.")
        try:
            return jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=self.flow.provider.issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"The ID token is refused: {exc}") from exc

    def store_tokens(self, access_token, id_token):
        self.flow.tokens["access"] = access_token

    def get_userinfo(self, access_token, id_token, payload):
        response = op.get(
            self.OIDC_OP_USER_ENDPOINT, headers={"Authorization": f"Bearer {access_token}"}
        )
        response.raise_for_status()
        if response.headers.get("content-type", "").lower().startswith("application/jwt"):
            info = self.verify_token(response.text)  # a signed userinfo, as the library
        else:
            info = response.json()
        if info.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo speaks of another subject.")
        self.flow.id_claims = payload
        return {**payload, **info}

    def verify_claims(self, claims):
        return bool(claims.get("sub"))

    # --- people: by (tenant, issuer, subject) ------------------------------
    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        flow, subject = self.flow, str(claims["sub"])
        with in_tenant(flow.tenant):
            store = flow.store
            user = store.user_of(flow.provider.issuer, subject)
            if user is None:
                if not _grants_a_role(claims, flow.config):
                    flow.refusal = "no_mapped_group"
                    return None
                user = store.create_user(flow.provider.issuer, subject, claims)
            flow.role = store.apply_claims(user, claims, flow.config)
            if flow.role is None:
                flow.refusal = "no_mapped_group"
                return None
        return user


def _grants_a_role(claims: dict, config: SsoConfig) -> bool:
    return role_for(groups_of(claims, config.groups_claim), config.role_map) is not None
