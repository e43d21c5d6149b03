"""Hostile input, driven by the OpenAPI schema: no 5xx, every answer in the error shape.

Every write operation of `/api/v1/schema/` gets, in each string field of its
request body (nested objects and list items included) and in each free-form
JSON object field: a NUL character, a lone surrogate and a value nested
20,000 deep. Each operation also gets a body with a UTF-8 byte order mark, a
body sent chunked (Transfer-Encoding, no Content-Length) and a body with a
field it does not know. The ids in paths are real objects of the caller's
tenant, so requests reach body validation rather than a 404.
"""

from __future__ import annotations

import json
import re
import socket
from typing import Any

import pytest
from django.test import Client

from tenancy_app.scoping import in_tenant

from .test_cross_tenant import fill, snapshot

WRITE_METHODS = ("post", "put", "patch")
DEEP = 20_000
PARAM = re.compile(r"{(\w+)}")

NUL = '"a\\u0000b"'
SURROGATE = '"\\ud800"'
NESTED = "[" * DEEP + "]" * DEEP


def resolve(schema: dict, node: dict) -> dict:
    # A nested object with its own description is `allOf: [{$ref}]` (drf-spectacular).
    while "$ref" in node or "allOf" in node:
        if "allOf" in node:
            node = node["allOf"][0]
            continue
        name = node["$ref"].rsplit("/", 1)[1]
        node = schema["components"]["schemas"][name]
    return node


def hole_paths(schema: dict, node: dict, path: list[Any], depth: int = 0) -> list[list[Any]]:
    """Paths (keys and list indexes) of every string field and free-form object in `node`."""
    node = resolve(schema, node)
    if depth > 6:
        return []
    if "allOf" in node:
        return hole_paths(schema, node["allOf"][0], path, depth + 1)
    kind = node.get("type")
    if kind == "string" or "enum" in node:
        return [path]
    if kind == "array":
        return hole_paths(schema, node.get("items", {}), [*path, 0], depth + 1)
    if kind == "object" or "properties" in node:
        properties = node.get("properties", {})
        if not properties:
            return [path]  # a free-form JSON object (payload, metadata, arguments, ...)
        found = []
        for name, child in properties.items():
            found += hole_paths(schema, child, [*path, name], depth + 1)
        return found
    return []


def body_with(path: list[Any], value_json: str) -> str:
    """JSON text of a body whose field at `path` is `value_json` (raw JSON text)."""
    marker = "__HOLE__"
    root: Any = marker
    for step in reversed(path):
        root = [root] if isinstance(step, int) else {step: root}
    return json.dumps(root).replace(json.dumps(marker), value_json)


def free_form(value_json: str) -> str:
    return '{"k": ' + value_json + "}"


def write_operations(schema: dict) -> list[tuple[str, str, dict]]:
    found = []
    for path, operations in schema["paths"].items():
        for method in WRITE_METHODS:
            operation = operations.get(method)
            if not operation or "requestBody" not in operation:
                continue
            body_schema = operation["requestBody"]["content"]["application/json"]["schema"]
            found.append((method, path, body_schema))
    return found


def send(client: Client, method: str, url: str, raw: bytes | str, **extra):
    if method == "get":
        return client.get(url, **extra)
    return getattr(client, method)(url, data=raw, content_type="application/json", **extra)


def assert_error_shape(response, context) -> dict:
    assert response.status_code < 500, (context, response.status_code, response.content[:300])
    assert response.status_code >= 400, (context, response.status_code)
    body = response.json()
    assert set(body) == {"error"}, context
    assert set(body["error"]) == {"code", "message", "details"}, context
    assert isinstance(body["error"]["details"], dict), context
    return body["error"]


@pytest.fixture
def operator_client(make_token, tenant_a) -> Client:
    """A token that may call every write: the admin role (decisions, deletions, erasures)."""
    return Client(headers={"Authorization": f"Bearer {make_token(tenant_a, role='admin')}"})


def test_every_string_field_of_every_write_refuses_nul_surrogates_and_deep_nesting(
    schema, objects_a, tenant_a, operator_client
):
    operations = write_operations(schema)
    assert len(operations) >= 14
    before = snapshot(tenant_a)
    sent = 0
    for method, path, body_schema in operations:
        url = fill(path, objects_a)
        holes = hole_paths(schema, body_schema, [])
        if not holes:  # no text to carry NUL or a surrogate: nest in every field instead
            for name in resolve(schema, body_schema)["properties"]:
                raw = body_with([name], NESTED)
                error = assert_error_shape(send(operator_client, method, url, raw), path)
                assert error["code"] == "nesting_too_deep", (path, name, error)
                sent += 1
        for hole in holes:
            schema_node = resolve(schema, body_schema)
            for step in hole:  # is the hole a free-form object or a string?
                schema_node = resolve(
                    schema,
                    schema_node["items"]
                    if isinstance(step, int)
                    else schema_node.get("properties", {}).get(step, {}),
                )
            is_object = schema_node.get("type") == "object"
            for value in (NUL, SURROGATE):
                raw = body_with(hole, free_form(value) if is_object else value)
                error = assert_error_shape(send(operator_client, method, url, raw), (path, hole))
                # Refused for its text, or earlier for its type (e.g. an enum).
                assert error["code"] in {"invalid_text", "validation_error"}, (path, hole, error)
                if error["code"] == "invalid_text":
                    assert list(error["details"]) == [
                        ".".join(str(s) for s in hole).replace(".0", "[0]")
                        + (".k" if is_object else "")
                    ], (path, hole, error)
                sent += 1
            raw = body_with(hole, free_form(NESTED) if is_object else NESTED)
            error = assert_error_shape(send(operator_client, method, url, raw), (path, hole))
            assert error["code"] == "nesting_too_deep", (path, hole, error)
            sent += 1
    assert sent > 100
    assert snapshot(tenant_a) == before


def test_every_write_refuses_a_bom_a_chunked_body_and_unknown_fields(
    schema, objects_a, tenant_a, operator_client
):
    before = snapshot(tenant_a)
    for method, path, _ in write_operations(schema):
        url = fill(path, objects_a)
        bom = send(operator_client, method, url, b"\xef\xbb\xbf{}")
        assert (bom.status_code, assert_error_shape(bom, path)["code"]) == (400, "invalid_encoding")
        latin1 = send(operator_client, method, url, '{"x": "caf\xe9"}'.encode("latin-1"))
        assert (latin1.status_code, assert_error_shape(latin1, path)["code"]) == (
            400,
            "invalid_encoding",
        )
        chunked = send(operator_client, method, url, b"{}", HTTP_TRANSFER_ENCODING="chunked")
        assert (chunked.status_code, assert_error_shape(chunked, path)["code"]) == (
            411,
            "length_required",
        )
        unknown = send(operator_client, method, url, '{"zz_not_a_field": 1}')
        error = assert_error_shape(unknown, path)
        assert (unknown.status_code, error["code"]) == (422, "unknown_field"), (path, error)
        assert error["details"]["zz_not_a_field"] == ["unknown field"]
    assert snapshot(tenant_a) == before


def test_request_bodies_in_the_schema_allow_no_undeclared_property(schema):
    for method, path, body_schema in write_operations(schema):
        component = resolve(schema, body_schema)
        assert component.get("additionalProperties") is False, (method, path)
    # The one open object: an effect's error keeps the keys the runtime sent.
    error = schema["components"]["schemas"]["EffectErrorInRequest"]
    assert "additionalProperties" not in error


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/runs/%00",
        "/api/v1/runs/a%00b/transition",
        "/api/v1/sessions/%ED%A0%80",
        "/api/v1/approvals/x%0Ay",
    ],
)
def test_ids_in_paths_that_cannot_be_ids_are_404(operator_client, tenant_a, url):
    for method in ("get", "post"):
        response = send(operator_client, method, url, "{}")
        assert (response.status_code, assert_error_shape(response, url)["code"]) == (
            404,
            "not_found",
        )


@pytest.mark.parametrize(
    "query",
    ["?status=%00", "?user_id=%00", "?limit=1e3", "?status=active&status=x", "?cursor=-1"],
)
def test_hostile_query_values_are_422(operator_client, tenant_a, query):
    response = operator_client.get(f"/api/v1/sessions{query}")
    assert response.status_code == 422, response.content
    assert_error_shape(response, query)


@pytest.mark.django_db(transaction=True)
def test_a_real_chunked_request_is_411_and_changes_nothing(live_server, make_token, tenant_a):
    """Through a real HTTP server, bytes on the wire: chunked framing, no Content-Length."""
    token = make_token(tenant_a)
    host, port = live_server.url.removeprefix("http://").split(":")
    body = b'{"user_id": "alice"}'
    request = (
        b"POST /api/v1/sessions HTTP/1.1\r\n"
        + f"Host: {host}\r\nAuthorization: Bearer {token}\r\n".encode()
        + b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        + f"{len(body):x}\r\n".encode()
        + body
        + b"\r\n0\r\n\r\n"
    )
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0].split(b" ")[1] == b"411", answer[:300]
    assert json.loads(payload)["error"]["code"] == "length_required"
    from sessions_app.models import Session

    with in_tenant(tenant_a):
        assert not Session.objects.exists()
