"""The one place API errors take their shape:
`{"error": {"code": ..., "message": ..., "details": {...}}}`.
"""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError, connection, transaction
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from .errors import StateroomError

_DRF_CODES: list[tuple[type[Exception], int, str]] = [
    (exceptions.ParseError, 400, "malformed_json"),
    (exceptions.AuthenticationFailed, 401, "unauthenticated"),
    (exceptions.NotAuthenticated, 401, "unauthenticated"),
    (exceptions.PermissionDenied, 403, "forbidden"),
    (DjangoPermissionDenied, 403, "forbidden"),
    (exceptions.NotFound, 404, "not_found"),
    (Http404, 404, "not_found"),
    (exceptions.MethodNotAllowed, 405, "method_not_allowed"),
    (exceptions.NotAcceptable, 406, "not_acceptable"),
    (exceptions.UnsupportedMediaType, 415, "unsupported_media_type"),
    (exceptions.Throttled, 429, "rate_limited"),
]


def error_body(code: str, message: str, details=None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def exception_handler(exc, context):
    request = getattr(context.get("request"), "_request", None)

    def _rollback() -> None:
        # A failed request changes nothing: the tenant transaction opened by
        # TenantMiddleware is marked for rollback (DRF does this only with ATOMIC_REQUESTS).
        if getattr(request, "tenant_atomic", False) and connection.in_atomic_block:
            transaction.set_rollback(True)

    headers = {}
    if isinstance(exc, StateroomError):
        _rollback()
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status)
    if isinstance(exc, exceptions.ValidationError):
        _rollback()
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        return Response(
            error_body("validation_error", "Some fields are invalid.", detail), status=422
        )
    if (
        isinstance(exc, DatabaseError)
        and "insufficient_privilege" in repr(getattr(exc, "__cause__", "")).lower()
    ):
        _rollback()
        return Response(error_body("not_found", "Not found."), status=404)
    for klass, status, code in _DRF_CODES:
        if isinstance(exc, klass):
            _rollback()
            if isinstance(exc, exceptions.APIException):
                if getattr(exc, "auth_header", None):
                    headers["WWW-Authenticate"] = exc.auth_header
                if getattr(exc, "wait", None):
                    headers["Retry-After"] = str(int(exc.wait))
                message = str(exc.detail)
            else:
                message = "Not found." if status == 404 else "Forbidden."
            return Response(error_body(code, message), status=status, headers=headers)
    return None


def json_404(request, exception=None):
    return JsonResponse(error_body("not_found", "No such endpoint."), status=404)


def json_500(request):
    return JsonResponse(error_body("server_error", "Internal server error."), status=500)
