"""Runtime bearer tokens: resolving them, and DRF authentication and permissions.

The token is resolved by TenantMiddleware (which needs the tenant before the
view runs, to enter its scope) with `bearer`; the DRF class only reports the
result to DRF.

**A token the process knows is not looked up again** (issue 37: the lookup
was a round trip of its own on every call). The first request with a token
reads it (and its tenant) from the database; the process keeps the row, and
the tenant row's version (`xmin:ctid`, changed by every update). A later
request with it is answered from that copy, and its first tenant statement
also calls `tenancy_token_live` (`stateroom.sql.guard_tenant_statements`): in
the same statement or message, no round trip of its own. If the token was
revoked or the tenant changed since, that statement does nothing and raises;
the middleware forgets the copy and resolves the token afresh (a revoked
token: 401; a changed tenant: the view runs again on the fresh row). So a
revoked token still fails its very next request, in every process, and a
tenant's new policy applies to the next request. A request that sends no
tenant statement checks once at its end (`stateroom.sql.check_pending_guard`).
"""

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions, throttling

from stateroom.sql import columns, hot_cursor, model_from_row

from .models import TOKEN_ROLE_RANK, RuntimeToken, Tenant, TokenRole, hash_secret

logger = logging.getLogger(__name__)

# last_used_at is refreshed at most this often, so the hot path does not write on every call.
LAST_USED_RESOLUTION = timedelta(seconds=60)

_TOKEN_COLUMNS = len(RuntimeToken._meta.concrete_fields)
_TENANT_COLUMNS = len(Tenant._meta.concrete_fields)
# The token table has row-level security and the tenant is not known yet: the
# lookup goes through a SECURITY DEFINER function that answers only this
# question (the live token with this hash), see migration tenancy_app 0002.
_RESOLVE_SQL = (
    f"SELECT {columns(RuntimeToken, 't')}, {columns(Tenant, 'n')},"
    " n.xmin::text || ':' || n.ctid::text"
    f" FROM tenancy_token_by_hash(%s) t JOIN {Tenant._meta.db_table} n"
    f" ON n.{Tenant._meta.pk.column} = t.{RuntimeToken._meta.get_field('tenant').column}"
)
_TOUCH_SQL = "SELECT tenancy_token_touch(%s, %s, %s)"
# Raises (stateroom.sql.GUARD_SQLSTATE) unless the token is live and the tenant row is the
# version given: migration tenancy_app 0011.
LIVE = "tenancy_token_live(%s, %s, %s)"
# Tokens one process keeps (secret hash -> the row read); past this, it starts again.
KNOWN_MAX = 10_000
_known: dict[str, "_Known"] = {}


@dataclass(frozen=True)
class Bearer:
    """A request's token (with its tenant), and `check`: the guard (SQL, parameters) its
    first tenant statement must carry when the token came from the process's copy,
    else None (read from the database for this request)."""

    token: RuntimeToken
    check: tuple[str, list[Any]] | None


def _secret(header: str | None) -> str | None:
    scheme, _, raw = (header or "").partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw:
        return None
    return hash_secret(raw)


def _from_row(row: tuple[Any, ...]) -> RuntimeToken:
    token = model_from_row(RuntimeToken, row[:_TOKEN_COLUMNS])
    token.tenant = model_from_row(Tenant, row[_TOKEN_COLUMNS : _TOKEN_COLUMNS + _TENANT_COLUMNS])
    return token


def _touch(token: RuntimeToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
        # Conditional: of several processes seeing the same stale stamp, one writes.
        with hot_cursor(tenant_owned=False) as cursor:
            cursor.execute(_TOUCH_SQL, [token.pk, now, now - LAST_USED_RESOLUTION])
        token.last_used_at = now


def _read(hashed: str) -> tuple[Any, ...] | None:
    with hot_cursor(tenant_owned=False) as cursor:
        cursor.execute(_RESOLVE_SQL, [hashed])
        return cursor.fetchone()


class _Known:
    """A token row the process read (with its tenant's, and that row's version), and when
    the process last stamped its use."""

    def __init__(self, row: tuple[Any, ...], last_used_at: Any) -> None:
        self.row = row[:-1]
        self.version = row[-1]
        self.last_used_at = last_used_at


def bearer(header: str | None, *, fresh: bool = False) -> Bearer | None:
    """The token of an `Authorization: Bearer …` header, or None (no such live token).

    From the process's copy when it has one (with the check its first tenant
    statement carries), else (or `fresh`) read (one prepared statement) and kept.
    `last_used_at` is written at most once a minute per token.
    """
    hashed = _secret(header)
    if hashed is None:
        return None
    known = None if fresh else _known.get(hashed)
    if known is None:
        row = _read(hashed)
        if row is None:
            return None
        token, check = _from_row(row), None
        if len(_known) >= KNOWN_MAX:
            _known.clear()
        known = _known[hashed] = _Known(row, token.last_used_at)
    else:
        token = _from_row(known.row)  # each request its own instances
        token.last_used_at = known.last_used_at
        check = (LIVE, [token.pk, token.tenant_id, known.version])
    _touch(token)
    known.last_used_at = token.last_used_at
    return Bearer(token, check)


def forget(header: str | None) -> None:
    """Drop the process's copy of this token (its check refused)."""
    hashed = _secret(header)
    if hashed is not None:
        _known.pop(hashed, None)


def resolve_bearer(header: str | None) -> RuntimeToken | None:
    """The live token (with its tenant) read now from the database, or None.

    One prepared statement: a revoked token is refused on the very next call.
    """
    found = bearer(header, fresh=True)
    return None if found is None else found.token


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
