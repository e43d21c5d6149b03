"""The API's JSON renderer writes what DRF's JSONRenderer writes, byte for byte."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from decimal import Decimal

import orjson
import pytest
from django.utils.translation import gettext_lazy
from rest_framework.exceptions import ErrorDetail
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from stateroom.renderers import ORJSONRenderer

UTC = dt.UTC
SAMPLES = {
    "items page": {
        "results": [
            {
                "seq": 7,
                "role": "assistant",
                "payload": {"text": "naïve — 東京 🚀", "n": [1, 2.5, -0.25, True, None]},
                "created_at": "2026-12-04T02:35:56.123456Z",
            }
        ],
        "next": None,
    },
    "separators a script must not see raw": {"text": "a\u2028b\u2029c"},
    "control characters": {"text": 'tab\tnew\nline\x00\x1f "quoted" \\ /'},
    "datetimes": {
        "utc": dt.datetime(2026, 12, 4, 2, 35, 56, 123456, tzinfo=UTC),
        "whole second": dt.datetime(2026, 12, 4, 2, 35, 56, tzinfo=UTC),
        "offset": dt.datetime(2026, 12, 4, 3, 35, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        "date": dt.date(2026, 12, 4),
        "time": dt.time(2, 35, 56, 1000),
        "duration": dt.timedelta(seconds=90),
    },
    "what DRF's encoder converts": {
        "decimal": Decimal("12.50"),
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "lazy": gettext_lazy("Not found."),
        "bytes": b"raw",
        "set": {1},
        "tuple": (1, "two"),
    },
    "DRF's own containers and error text": ReturnDict(
        {
            "error": {
                "code": ErrorDetail("not_found", code="not_found"),
                "list": ReturnList([1], serializer=None),
            }
        },
        serializer=None,
    ),
    "what orjson refuses (DRF renders it)": {1: "int key", "big": 2**70},
    "a list": [1, "x", {"k": []}],
}


@pytest.mark.parametrize("data", SAMPLES.values(), ids=SAMPLES.keys())
def test_the_same_bytes_as_drf(data):
    assert ORJSONRenderer().render(data) == JSONRenderer().render(data)


def test_a_small_float_is_the_same_number_spelled_shorter():
    data = {"x": [-3e-7, 1e16, 1.5e300, 0.1]}
    ours, drfs = ORJSONRenderer().render(data), JSONRenderer().render(data)
    assert json.loads(ours) == json.loads(drfs) == data
    assert ours == b'{"x":[-3e-7,1e+16,1.5e+300,0.1]}'  # DRF: -3e-07


def test_a_fragment_is_written_as_it_is_and_decoded_on_the_pretty_path():
    data = {"results": [{"payload": orjson.Fragment('{"b": [1, 2], "a": "\u2028"}')}]}
    assert (
        ORJSONRenderer().render(data) == b'{"results":[{"payload":{"b": [1, 2], "a": "\\u2028"}}]}'
    )
    pretty = ORJSONRenderer().render(data, "application/json; indent=2")
    assert json.loads(pretty) == {"results": [{"payload": {"b": [1, 2], "a": "\u2028"}}]}


def test_no_body_for_none_and_the_pretty_form_when_asked():
    assert ORJSONRenderer().render(None) == b""
    data = SAMPLES["items page"]
    media = "application/json; indent=2"
    assert ORJSONRenderer().render(data, media) == JSONRenderer().render(data, media)
    assert b"\n  " in ORJSONRenderer().render(data, media)


def test_a_value_neither_encoder_knows_is_still_an_error():
    with pytest.raises(TypeError):
        ORJSONRenderer().render({"x": object()})


def test_an_unrepresentable_float_is_null_not_an_error():
    # DRF's strict JSON raises here; orjson writes null (documented in the module).
    assert json.loads(ORJSONRenderer().render({"x": float("nan")})) == {"x": None}


def test_the_api_renders_with_it(client):
    response = client.get("/api/v1/me")
    assert response.status_code == 401
    assert isinstance(response.accepted_renderer, ORJSONRenderer)
