"""A body over the limit is refused (413) and read to its end, so the connection stays usable."""

from __future__ import annotations

import io
import json

from django.core.handlers.wsgi import WSGIRequest

from tenancy_app.middleware import RequestSizeLimitMiddleware


def request_with_body(body: bytes) -> tuple[WSGIRequest, io.BytesIO]:
    stream = io.BytesIO(body + b"GET /next HTTP/1.1\r\n")  # what the client sends next
    environ = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/api/v1/sessions/s-1/items",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": stream,
        "wsgi.url_scheme": "http",
    }
    return WSGIRequest(environ), stream


def test_a_refused_body_is_read_to_its_end_and_not_past_it(settings):
    settings.STATEROOM_MAX_BODY_BYTES = 1000
    body = b"x" * 300_000
    request, stream = request_with_body(body)
    views = []
    response = RequestSizeLimitMiddleware(views.append)(request)
    assert response.status_code == 413
    assert json.loads(response.content)["error"] == {
        "code": "payload_too_large",
        "message": "Request body is over the size limit.",
        "details": {"limit_bytes": 1000},
    }
    assert views == []  # the view never ran
    assert stream.tell() == len(body)  # the body is consumed, the next request is not
    assert stream.read() == b"GET /next HTTP/1.1\r\n"


def test_a_body_within_the_limit_is_left_to_the_view(settings):
    settings.STATEROOM_MAX_BODY_BYTES = 1000
    request, stream = request_with_body(b'{"a": 1}')
    response = RequestSizeLimitMiddleware(lambda r: r.read())(request)
    assert response == b'{"a": 1}'
    assert stream.tell() == 8
