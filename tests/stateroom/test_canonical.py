"""stateroom.canonical: the fast path (orjson) spells exactly what RFC 8785 does."""

from __future__ import annotations

import json

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from stateroom.canonical import (
    MAX_SAFE_INTEGER,
    canonical_bytes,
    canonical_json,
    digest,
    plain_text,
)
from stateroom.errors import Unprocessable
from stateroom.jsondata import MAX_DEPTH, storable_json

# Every character class that matters: control characters, quotes and backslashes,
# BMP text, characters beyond the BMP (in values and in keys), and lone surrogates.
TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x7F),
        st.characters(min_codepoint=0x80, max_codepoint=0xFFFF),
        st.characters(min_codepoint=0x10000, max_codepoint=0x10FFFF),
    ),
    max_size=12,
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-MAX_SAFE_INTEGER - 5, max_value=MAX_SAFE_INTEGER + 5),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(TEXT, children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(VALUES)
def test_every_value_is_spelled_as_rfc8785_spells_it(value):
    try:
        expected = rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, ValueError, OverflowError) as refused:
        try:
            canonical_bytes(value)
        except type(refused):
            return
        raise AssertionError(f"rfc8785 refused {value!r}, the fast path did not") from None
    assert canonical_bytes(value) == expected


def test_the_cases_where_the_spellings_differ_go_to_rfc8785():
    # Floats: ECMAScript's shortest form, not Python's repr.
    assert canonical_json({"x": 1e-7, "y": 1.0}) == '{"x":1e-7,"y":1}'
    # Keys beyond the BMP sort by UTF-16 code units: U+1F600 before U+FF61.
    assert canonical_json({"\uff61": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\uff61":1}'
    # Plain values: the same bytes, and the same digest clients recompute.
    plain = {"b": [1, "two", None, True], "a": {"z": "é\n\u0001"}}
    assert canonical_bytes(plain) == rfc8785.dumps(plain)
    assert len(digest(plain)) == 64


def test_every_character_is_escaped_as_rfc8785_escapes_it():
    # Every code point but the surrogates, 512 to a string, as a value and as a key.
    points = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 512):
        text = "".join(map(chr, points[start : start + 512]))
        value = {"k": text, text[:40]: [text]} if points[start] < 0x10000 else {"k": text}
        assert canonical_bytes(value) == rfc8785.dumps(value), hex(points[start])


def test_what_orjson_refuses_goes_to_rfc8785():
    deep = _nested(300, "leaf")  # past orjson's 254 levels: rfc8785's bytes
    assert canonical_bytes(deep) == rfc8785.dumps(deep)
    with pytest.raises(rfc8785.CanonicalizationError):
        canonical_bytes({"k": "lone \ud800 surrogate"})


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_storable_json_takes_its_one_walk_only_as_far_as_the_slow_checks_go():
    """`plain_text` (one walk) and the slow path (`ensure_domain_data` and rfc8785)
    accept and refuse the same nesting: MAX_DEPTH containers, not one more."""
    for leaf in ("text", 1.5):  # a float takes the slow path
        deepest = _nested(MAX_DEPTH, leaf)
        assert json.loads(storable_json(deepest)) == deepest
        with pytest.raises(Unprocessable) as refused:
            storable_json(_nested(MAX_DEPTH + 1, leaf))
        assert refused.value.code == "not_serializable"
    assert plain_text(_nested(MAX_DEPTH, "x"), MAX_DEPTH) is not None
    assert plain_text(_nested(MAX_DEPTH + 1, "x"), MAX_DEPTH) is None
    loop: list = []
    loop.append(loop)
    assert plain_text({"l": loop}, MAX_DEPTH) is None  # a cycle ends at the depth, no hang
    assert plain_text({"k": "\ud800"}, MAX_DEPTH) is None  # not Unicode: the slow path says so
