"""Error pages: JSON under /api/, HTML elsewhere; a database outage is 503 with Retry-After.

And the health check.
"""

import logging
import sys

from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from . import dberrors
from .api import error_body

API_PREFIX = "/api/"
logger = logging.getLogger(__name__)


def handler404(request, exception=None):
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return render(request, "errors/404.html", status=404)


@csrf_exempt  # no state changes; a POST to no path is 404, not a CSRF refusal
def api_not_found(request):
    """No such API path, whatever the method: JSON 404, never a page (see `stateroom.urls`)."""
    return JsonResponse(
        error_body("not_found", "No such API path.", {"path": request.path[:200]}), status=404
    )


def handler403(request, exception=None):
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("forbidden", "Forbidden."), status=403)
    return render(request, "errors/403.html", {"message": str(exception or "")}, status=403)


def handler500(request):
    """Any uncaught exception, a middleware's included (Django calls this inside its `except`).

    A database that refuses connections or has none to spare is an outage,
    not a bug: 503 with Retry-After, in the error shape under /api/.
    """
    mapped = dberrors.classify(sys.exc_info()[1])
    if mapped is not None and mapped.status == 503:
        return outage_response(request, mapped)
    if request.path.startswith(API_PREFIX):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return render(request, "errors/500.html", status=500)


def outage_response(request, mapped: dberrors.Mapped) -> HttpResponse:
    logger.warning(
        "answering 503 %s for %s: the database is unavailable", mapped.code, request.path
    )
    if request.path.startswith(API_PREFIX):
        response = JsonResponse(error_body(mapped.code, mapped.message), status=503)
    else:
        # A page of its own: the base template would query the database again.
        response = HttpResponse(
            render_to_string("errors/503.html", {"retry_after": mapped.retry_after}), status=503
        )
    response["Retry-After"] = str(mapped.retry_after)
    return response


@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})
