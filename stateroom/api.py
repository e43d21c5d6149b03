"""The one place API errors take their shape:
`{"error": {"code": ..., "message": ..., "details": {...}}}`; and what every
app's API shares (body parsing, lookups before validation, pages, fields).
"""

import json
import math
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError, connection, transaction
from django.http import Http404, JsonResponse
from rest_framework import exceptions, serializers
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from .errors import StateroomError, Unprocessable
from .pages import keyset_slice

T = TypeVar("T")

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


class EmptyAsNullCharField(serializers.CharField):
    """Optional text the database keeps as "" and the API shows as null (seed: `str | None`)."""

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value):
        return value or None


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
        if not exc.keep_changes:
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
                    headers["Retry-After"] = str(math.ceil(exc.wait))
                message = str(exc.detail)
            else:
                message = "Not found." if status == 404 else "Forbidden."
            return Response(error_body(code, message), status=status, headers=headers)
    return None


def json_404(request, exception=None):
    return JsonResponse(error_body("not_found", "No such endpoint."), status=404)


def json_500(request):
    return JsonResponse(error_body("server_error", "Internal server error."), status=500)


class BadRequest(StateroomError):
    status = 400
    code = "malformed_json"


class JSONObjectParser(JSONParser):
    """JSON bodies must be objects; an empty body reads as `{}`."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        if not raw.strip():
            return {}
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise BadRequest(f"Malformed JSON: {exc}") from exc
        if not isinstance(data, dict):
            raise BadRequest("The request body must be a JSON object.", code="body_not_object")
        return data


DEFAULT_LIMIT = 50
MAX_LIMIT = 500


def not_found_first(parse: Callable[[], T], lookup: Callable[[], object]) -> T:
    """`parse()` the request; if it refuses the input, an unknown target is still 404 first.

    The happy path reads nothing: the store's own statement finds the target
    (and refuses an unknown one with 404). Only when the input is refused is
    the target looked up, so another tenant's id is 404 whatever was sent.
    """
    try:
        return parse()
    except (exceptions.APIException, StateroomError):
        lookup()
        raise


def validated(serializer_class, request, *, lookup: Callable[[], object]) -> dict:
    """The request body's validated data (a dict), `not_found_first`."""

    def parse() -> dict:
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    return not_found_first(parse, lookup)


def parse_limit(request, default: int = DEFAULT_LIMIT) -> int:
    raw = request.query_params.get("limit")
    if raw is None or raw == "":
        return default
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise Unprocessable(
            "limit must be an integer from 1 to 500.",
            details={"limit": [f"must be an integer from 1 to {MAX_LIMIT}"]},
        )
    return limit


def parse_int_param(request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError as exc:
        raise Unprocessable(
            f"{name} must be an integer.", details={name: ["must be an integer"]}
        ) from exc


def keyset_page(request, queryset, serialize, *, limit: int | None = None) -> Response:
    """One page of a list ordered by descending `id`, with an absolute `next` URL.

    The cursor is the last id seen (`?cursor=`); each page costs one indexed
    range scan however deep it is (no OFFSET).
    """
    limit = limit or parse_limit(request)
    rows, more = keyset_slice(queryset, cursor=parse_int_param(request, "cursor"), size=limit)
    next_url = None
    if more:
        params = request.query_params.copy()
        params["cursor"] = str(rows[-1].id)
        next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
    return Response({"results": [serialize(row) for row in rows], "next": next_url})
