"""The HTTP side of the metrics: a middleware that counts every request by route, and
`/metrics`, served only with the bearer token `STATEROOM_METRICS_TOKEN` (README: Metrics)."""

from __future__ import annotations

import hmac
import time

from django.conf import settings
from django.http import Http404, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from . import metrics


def route_of(request) -> str:
    """The URL pattern's name (`namespace:name`), never the raw path: a bounded label."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return metrics.UNMATCHED
    return match.view_name or metrics.UNMATCHED


class MetricsMiddleware:
    """First in MIDDLEWARE: each request's latency and count, by route, method and status."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        metrics.count_request(
            route_of(request),
            request.method or "",
            response.status_code,
            time.perf_counter() - started,
        )
        metrics.update_connections()
        return response


def _authorized(request, token: str) -> bool:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


@csrf_exempt
def metrics_view(request):
    """The Prometheus text format. No token configured: 404 (as if there were no such
    page); a request without the right bearer token: 401."""
    token = settings.STATEROOM_METRICS_TOKEN
    if not token:
        raise Http404("No such page")
    if not _authorized(request, token):
        response = HttpResponse("A bearer token is required.\n", status=401)
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        response["Content-Type"] = "text/plain; charset=utf-8"
        return response
    if request.method not in {"GET", "HEAD"}:
        return HttpResponse(status=405, headers={"Allow": "GET, HEAD"})
    body = generate_latest(metrics.registry())
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
