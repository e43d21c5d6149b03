"""Web-edge middleware: request framing, caching of authenticated answers, session lifetime.

- `LengthRequiredMiddleware`: a body sent with `Transfer-Encoding` (chunked)
  and no length is refused with 411 before the application reads it. Django
  reads a body by its Content-Length, so such a body would otherwise read as
  empty. The refused body is read and dropped, so the connection lives on.
- `NoStoreMiddleware`: an answer to a request that carries credentials (a
  session cookie or an `Authorization` header) is `Cache-Control: no-store`:
  no browser or proxy keeps a copy of a tenant's data.
- `CSPMiddleware`: django-csp's, with the settings' policy built once.
- `SessionTimeoutMiddleware`: a console session ends after
  `STATEROOM_SESSION_IDLE_SECONDS` without a request and, whatever the
  activity, `STATEROOM_SESSION_MAX_SECONDS` after the login.
"""

from __future__ import annotations

import time

import csp.middleware
from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.utils import build_policy
from django.conf import settings
from django.contrib.auth import logout
from django.contrib.auth.signals import user_logged_in
from django.contrib.auth.views import redirect_to_login
from django.dispatch import receiver
from django.http import HttpResponse, JsonResponse
from django.shortcuts import resolve_url
from django.utils.cache import add_never_cache_headers

from .errors import error_body

API_PREFIX = "/api/"
# Past this much, a refused body is not read: the server closes its connection.
DRAIN_LIMIT = 64 * 1024 * 1024
AUTH_AT = "_stateroom_auth_at"
SEEN_AT = "_stateroom_seen_at"
# The idle clock is written back to the session at most this often (a write per request
# would cost a query on every page).
SEEN_RESOLUTION = 60


class LengthRequiredMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get("HTTP_TRANSFER_ENCODING"):
            message = "Send the body with a Content-Length; chunked bodies are not accepted."
            if request.path.startswith(API_PREFIX):
                response = JsonResponse(error_body("length_required", message), status=411)
            else:
                response = HttpResponse(message, status=411, content_type="text/plain")
            # Read and dropped first, as a refused body too large is (RequestSizeLimit):
            # left unread, it would end the keep-alive connection it came on.
            length = declared_length(request)
            if length:  # a length given as well: it bounds what is there to read
                drain(request, min(length, DRAIN_LIMIT))
            else:
                drain(request.META.get("wsgi.input"))
            return response
        return self.get_response(request)


def declared_length(request) -> int:
    """The request's Content-Length; 0 when there is none or it is not a number."""
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0


def drain(stream, limit: int = DRAIN_LIMIT) -> None:
    """Read and drop up to `limit` bytes of a refused request's body (`wsgi.input`, or a
    Django request: whatever has `read`), so the connection can carry the next call."""
    left = limit
    while stream is not None and left > 0 and (chunk := stream.read(min(left, 64 * 1024))):
        left -= len(chunk)


# What django-csp's decorators set on a response that has a policy of its own.
_OWN_POLICY = tuple(
    f"_csp_{part}{ro}" for part in ("config", "update", "replace") for ro in ("", "_ro")
)


class CSPMiddleware(csp.middleware.CSPMiddleware):
    """django-csp's middleware, with the header of the settings' policy built once.

    django-csp builds the header again for every response: about 60 µs of an
    API call's 2 ms here (measured for the wire-speed issue). A response with no
    policy of its own (django-csp's decorators), to a request that used no
    nonce, always gets the settings' policy: that text is built once, and again
    when a setting is replaced (`override_settings`). Any other response is
    django-csp's own, as are the rules applied here: the debug pages go
    without, a response that has the header or is exempt keeps its own, and
    `EXCLUDE_URL_PREFIXES` is honoured.
    """

    _built: tuple = (None, None, ())

    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(
            getattr(response, name, None) is not None for name in _OWN_POLICY
        ):
            return super().process_response(request, response)
        if settings.DEBUG and response.status_code in (404, 500):
            return response
        for header, value, exempt, prefixes in self._headers():
            if (
                value
                and header not in response
                and getattr(response, exempt, False) is False
                and not request.path_info.startswith(prefixes)
            ):
                response[header] = value
        # As django-csp: a nonce asked for after the header is written is an error.
        request.csp_nonce = csp.middleware.CheckableLazyObject(self._csp_nonce_post_response)
        return response

    def _headers(self) -> tuple:
        policy = getattr(settings, "CONTENT_SECURITY_POLICY", None)
        report_only = getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None)
        built_for, built_for_ro, headers = CSPMiddleware._built
        if policy is not built_for or report_only is not built_for_ro:
            headers = tuple(
                (header, build_policy(report_only=ro), exempt, tuple(prefixes or ()))
                for header, ro, exempt, prefixes in (
                    (HEADER, False, "_csp_exempt", (policy or {}).get("EXCLUDE_URL_PREFIXES")),
                    (
                        HEADER_REPORT_ONLY,
                        True,
                        "_csp_exempt_ro",
                        (report_only or {}).get("EXCLUDE_URL_PREFIXES"),
                    ),
                )
            )
            CSPMiddleware._built = (policy, report_only, headers)
        return headers


class NoStoreMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "HTTP_AUTHORIZATION" in request.META or settings.SESSION_COOKIE_NAME in request.COOKIES:
            add_never_cache_headers(response)
        return response


class SessionTimeoutMiddleware:
    """Idle and absolute timeouts of console sessions (after AuthenticationMiddleware)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        session = getattr(request, "session", None)
        if session is not None and "_auth_user_id" in session:
            now = time.time()
            if session.get(AUTH_AT) is None:  # a session from before these timeouts
                session[AUTH_AT] = session[SEEN_AT] = now
            auth_at, seen_at = session[AUTH_AT], session.get(SEEN_AT, session[AUTH_AT])
            if (
                now - auth_at > settings.STATEROOM_SESSION_MAX_SECONDS
                or now - seen_at > settings.STATEROOM_SESSION_IDLE_SECONDS
            ):
                logout(request)
                if request.headers.get("HX-Request"):
                    response = HttpResponse(status=204)
                    response["HX-Redirect"] = resolve_url(settings.LOGIN_URL)
                    return response
                return redirect_to_login(request.get_full_path())
            if now - seen_at > SEEN_RESOLUTION:
                session[SEEN_AT] = now
        return self.get_response(request)


def client_ip(request) -> str:
    """The client's address: the connection's, or counted back through trusted proxies."""
    count = settings.STATEROOM_TRUSTED_PROXY_COUNT
    if count > 0:
        hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        hops = [h for h in hops if h]
        if len(hops) >= count:
            return hops[-count]
    return request.META.get("REMOTE_ADDR", "")


@receiver(user_logged_in)
def start_session_clock(sender, request, user, **kwargs) -> None:
    if request is not None and hasattr(request, "session"):
        now = time.time()
        request.session[AUTH_AT] = now
        request.session[SEEN_AT] = now
