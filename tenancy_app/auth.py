"""Runtime bearer tokens: resolving them, and DRF authentication and permissions.

The token is resolved by TenantMiddleware (which needs the tenant before the
view runs, to enter its scope) with `resolve_bearer`; the DRF class only
reports the result to DRF.
"""

import logging
import time
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions, throttling

from stateroom.sql import columns, hot_cursor, model_from_row

from .models import TOKEN_ROLE_RANK, RuntimeToken, Tenant, TokenRole, hash_secret

logger = logging.getLogger(__name__)

# last_used_at is refreshed at most this often, so the hot path does not write on every call.
LAST_USED_RESOLUTION = timedelta(seconds=60)

_TOKEN_COLUMNS = len(RuntimeToken._meta.concrete_fields)
# The token table has row-level security and the tenant is not known yet: the
# lookup goes through a SECURITY DEFINER function that answers only this
# question (the live token with this hash), see migration tenancy_app 0002.
_RESOLVE_SQL = (
    f"SELECT {columns(RuntimeToken, 't')}, {columns(Tenant, 'n')}"
    f" FROM tenancy_token_by_hash(%s) t JOIN {Tenant._meta.db_table} n"
    f" ON n.{Tenant._meta.pk.column} = t.{RuntimeToken._meta.get_field('tenant').column}"
)
_TOUCH_SQL = "SELECT tenancy_token_touch(%s, %s, %s)"


def resolve_bearer(header: str | None) -> RuntimeToken | None:
    """The live token (with its tenant) for an `Authorization: Bearer …` header, or None.

    One prepared statement, read fresh on every request: a revoked token is
    refused on the very next call, in every process. `last_used_at` is
    written at most once a minute per token.
    """
    scheme, _, raw = (header or "").partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw:
        return None
    with hot_cursor(tenant_owned=False) as cursor:
        cursor.execute(_RESOLVE_SQL, [hash_secret(raw)])
        row = cursor.fetchone()
    if row is None:
        return None
    token = model_from_row(RuntimeToken, row[:_TOKEN_COLUMNS])
    token.tenant = model_from_row(Tenant, row[_TOKEN_COLUMNS:])
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        # Conditional: of several processes seeing the same stale stamp, one writes.
        with hot_cursor(tenant_owned=False) as cursor:
            cursor.execute(_TOUCH_SQL, [token.pk, now, now - LAST_USED_RESOLUTION])
        token.last_used_at = now
    return token


class TokenPrincipal:
    """What `request.user` is for an API call: the runtime token's identity."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, token) -> None:
        self.token = token
        self.pk = token.pk

    def __str__(self) -> str:
        return f"token:{self.token.name}"


class BearerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        django_request = request._request
        if getattr(django_request, "bearer_invalid", False):
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        token = getattr(django_request, "runtime_token", None)
        if token is None:
            return None
        return TokenPrincipal(token), token

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="stateroom"'


class IsRuntime(permissions.BasePermission):
    def has_permission(self, request, view) -> bool:
        return isinstance(request.user, TokenPrincipal)


def token_has_role(request, role: str) -> bool:
    """The caller is a token whose role is `role` or above (runtime < operator < admin)."""
    return (
        isinstance(request.user, TokenPrincipal)
        and TOKEN_ROLE_RANK.get(request.user.token.role, 0) >= TOKEN_ROLE_RANK[TokenRole(role)]
    )


class IsOperatorToken(permissions.BasePermission):
    message = "This call needs a token with the operator (or admin) role."

    def has_permission(self, request, view) -> bool:
        return token_has_role(request, TokenRole.OPERATOR)


class IsAdminToken(permissions.BasePermission):
    message = "This call needs a token with the admin role."

    def has_permission(self, request, view) -> bool:
        return token_has_role(request, TokenRole.ADMIN)


class TokenRateThrottle(throttling.SimpleRateThrottle):
    """Per-token request rate (`STATEROOM_API_RATE`, e.g. `100/second`); off when unset.

    Counts live in Django's cache: `STATEROOM_CACHE_URL` (Redis) shares them
    between web processes, or each process counts on its own. A cache that does
    not answer lets the request through (the API keeps serving) and says so in
    the log, at most once a minute.
    """

    scope = "runtime"
    _last_warning = 0.0

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception as exc:  # the cache (Redis) is down or slow
            now = time.monotonic()
            if now - TokenRateThrottle._last_warning > 60:
                TokenRateThrottle._last_warning = now
                logger.warning("rate limiting skipped: the cache does not answer (%s)", exc)
            return True

    def get_rate(self):
        # Read per request, so the setting can change without re-importing views.
        return settings.STATEROOM_API_RATE

    def get_cache_key(self, request, view):
        if not isinstance(request.user, TokenPrincipal):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}
