"""Error responses for drf-spectacular, so the schema lists every status an endpoint returns."""

from drf_spectacular.utils import OpenApiResponse, inline_serializer
from rest_framework import serializers

ErrorDetail = inline_serializer(
    "ErrorDetail",
    {
        "code": serializers.CharField(),
        "message": serializers.CharField(),
        "details": serializers.DictField(),
    },
)
Error = inline_serializer("Error", {"error": ErrorDetail})


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=Error, description=description)


ERRORS_AUTH = {
    401: error("Missing, invalid or revoked token"),
    429: error("Rate limited"),
    503: error("The database is unavailable or busy; retry after Retry-After seconds"),
}
ERRORS_READ = {
    **ERRORS_AUTH,
    404: error("Unknown id, or another tenant's id"),
    422: error("unknown_parameter: a query parameter this endpoint does not take"),
}
ERRORS_WRITE = {
    **ERRORS_READ,
    400: error("Malformed JSON, not UTF-8 (or with a byte order mark), or body not an object"),
    411: error("A chunked body without Content-Length"),
    413: error("Body over the size limit"),
    422: error(
        "Field validation failed (details lists the field paths); unknown_field; "
        "invalid_text (NUL or lone surrogate); nesting_too_deep; too_many_keys; duplicate_key; "
        "number_out_of_range (a number beyond ±(2**53 - 1) however written, 1e16 too)"
    ),
}
ERRORS_STATEFUL = {**ERRORS_WRITE, 409: error("Version/revision conflict or invalid transition")}
ERRORS_LIST = {**ERRORS_AUTH, 422: error("Invalid filter or limit; unknown_parameter")}
