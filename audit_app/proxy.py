"""The client address behind a proxy: noticing a proxy that is not trusted.

With `STATEROOM_TRUSTED_PROXY_COUNT=0` the client address is the connection's.
Behind a reverse proxy that is the proxy's, for every client: login lockouts
and throttles then count everyone together. A request carrying
`X-Forwarded-For` says a proxy is there; `ForwardedForWatchMiddleware` notes it
(a security notice, a log warning) and `manage.py check --deploy` warns
(`stateroom.W001`) until the count is set.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks
from django.db import DatabaseError

from audit_app.notices import note, seen

UNTRUSTED_PROXY = "forwarded_for_untrusted"


class ForwardedForWatchMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if settings.STATEROOM_TRUSTED_PROXY_COUNT == 0 and request.META.get("HTTP_X_FORWARDED_FOR"):
            # The header's value is the client's to choose: only where it came from is kept.
            note(UNTRUSTED_PROXY, {"remote_addr": request.META.get("REMOTE_ADDR", "")})
        return self.get_response(request)


@checks.register(checks.Tags.security, deploy=True)
def check_untrusted_proxy(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """Warn when requests came through a proxy whose X-Forwarded-For is not used."""
    if settings.STATEROOM_TRUSTED_PROXY_COUNT > 0:
        return []
    try:
        notice = seen(UNTRUSTED_PROXY)
    except DatabaseError:  # no database to ask (yet): nothing is known
        return []
    if notice is None:
        return []
    return [
        checks.Warning(
            "Requests arrived with an X-Forwarded-For header (last at "
            f"{notice.last_seen_at:%Y-%m-%d %H:%M} UTC, from "
            f"{notice.detail.get('remote_addr') or 'an unknown address'}) but "
            "STATEROOM_TRUSTED_PROXY_COUNT is 0: every client has the proxy's address.",
            hint=(
                "Set STATEROOM_TRUSTED_PROXY_COUNT to the number of proxies in front of "
                "Stateroom that append to X-Forwarded-For."
            ),
            id="stateroom.W001",
        )
    ]
