"""The one place API errors take their shape:
`{"error": {"code": ..., "message": ..., "details": {...}}}`; and what every
app's API shares (body parsing, lookups before validation, pages, fields).
"""

import math
from collections.abc import Callable
from typing import TypeVar

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import DatabaseError, connection, transaction
from django.http import Http404, JsonResponse
from rest_framework import exceptions, serializers
from rest_framework.parsers import JSONParser
from rest_framework.response import Response

from . import dberrors, jsongate
from .contract import (  # noqa: F401  (DEFAULT_LIMIT, MAX_LIMIT: the views' import)
    DEFAULT_LIMIT,
    MAX_LIMIT,
    UNKNOWN_FIELD,
    PageQuery,
    flatten,
    has_code,
    query,
)
from .errors import StateroomError, error_body
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


def exception_handler(exc, context):
    request = getattr(context.get("request"), "_request", None)

    def _rollback() -> None:
        # A failed request changes nothing: the tenant transaction opened by
        # TenantMiddleware is marked for rollback (DRF does this only with ATOMIC_REQUESTS).
        if getattr(request, "tenant_atomic", False) and connection.in_atomic_block:
            transaction.set_rollback(True)

    def _denied(status: int, code: str) -> None:
        # Read by TenantMiddleware, which records the refusal after the rollback.
        if request is not None:
            request.access_denied = (status, code)

    headers = {}
    if isinstance(exc, StateroomError):
        if not exc.keep_changes:
            _rollback()
        if exc.status in (403, 404) and exc.denial:
            _denied(exc.status, exc.code)
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status)
    if isinstance(exc, exceptions.ValidationError):
        _rollback()
        code = "unknown_field" if has_code(exc.detail, UNKNOWN_FIELD) else "validation_error"
        message = (
            "The body has fields this endpoint does not know."
            if code == "unknown_field"
            else "Some fields are invalid."
        )
        return Response(error_body(code, message, flatten(exc.detail)), status=422)
    if isinstance(exc, DatabaseError):
        mapped = dberrors.classify(exc)
        if mapped is not None:
            _rollback()
            if mapped.retry_after:
                headers["Retry-After"] = str(mapped.retry_after)
            if mapped.status == 404:
                _denied(404, mapped.code)
            return Response(
                error_body(mapped.code, mapped.message), status=mapped.status, headers=headers
            )
    for klass, status, code in _DRF_CODES:
        if isinstance(exc, klass):
            _rollback()
            if status in (403, 404):
                _denied(status, code)
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


class JSONObjectParser(JSONParser):
    """Every API body passes the JSON gate (`stateroom.jsongate`); an empty body reads as `{}`."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        return jsongate.parse_object(raw)


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


def keyset_page(
    request, queryset, serialize, *, page: dict | None = None, context: dict | None = None
) -> Response:
    """One page of a list ordered by descending `id`, with an absolute `next` URL.

    The cursor is the last id seen (`?cursor=`); each page costs one indexed
    range scan however deep it is (no OFFSET). `page` is the validated query
    (`limit`, `cursor`) when the view has read it with its own filters.
    `serialize`: a serializer class (with `context`), or a function of one row.
    """
    if page is None:
        page = query(request, PageQuery)
    limit = page.get("limit") or DEFAULT_LIMIT
    rows, more = keyset_slice(queryset, cursor=page.get("cursor"), size=limit)
    next_url = None
    if more:
        params = request.query_params.copy()
        params["cursor"] = str(rows[-1].id)
        next_url = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
    if isinstance(serialize, type) and issubclass(serialize, serializers.BaseSerializer):
        # One list serializer for the page: DRF copies a serializer's fields on each
        # instantiation, so a serializer per row costs more than the query.
        results = serialize(rows, many=True, context=context or {}).data
    else:
        results = [serialize(row) for row in rows]
    return Response({"results": results, "next": next_url})
