"""DRF authentication and permissions for runtime bearer tokens.

The token is resolved by TenantMiddleware (which needs the tenant before the
view runs, to enter its scope); this class only reports the result to DRF.
"""

from django.conf import settings
from rest_framework import authentication, exceptions, permissions, throttling

from .models import TokenRole


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


class IsOperatorToken(permissions.BasePermission):
    message = "This call needs a token with the operator role."

    def has_permission(self, request, view) -> bool:
        return (
            isinstance(request.user, TokenPrincipal)
            and request.user.token.role == TokenRole.OPERATOR
        )


class TokenRateThrottle(throttling.SimpleRateThrottle):
    """Per-token request rate (`STATEROOM_API_RATE`, e.g. `100/second`); off when unset.

    Counts live in Django's cache: configure a shared cache (Redis) when
    running several web processes, or each process counts on its own.
    """

    scope = "runtime"

    def get_rate(self):
        # Read per request, so the setting can change without re-importing views.
        return settings.STATEROOM_API_RATE

    def get_cache_key(self, request, view):
        if not isinstance(request.user, TokenPrincipal):
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}
