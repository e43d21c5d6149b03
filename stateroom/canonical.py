"""The one canonical JSON of the project: RFC 8785 (JSON Canonicalization Scheme).

Every digest and every hash is taken of these bytes: an approval's
`call_digest`, an effect's `request_digest`, an item append's idempotency
digest, the audit chain, and a checkpoint's stored text. RFC 8785 spells
each value one way in every language: object keys sorted by UTF-16 code
units, no whitespace, strings as UTF-8 with only the escapes JSON requires,
numbers as ECMAScript prints them (`1.0` is `1`, `1e21` is `1e+21`). Clients
recompute `call_digest` as `sha256(JCS([tool_name, arguments]))`, e.g. with the
`rfc8785` package in Python or `canonicalize` in JavaScript.

Numbers must be I-JSON (RFC 7493): integers within ±(2**53 - 1) and finite
floats; the API's JSON gate refuses others (`stateroom.jsongate`).

Rows written before this module existed carry digests of the older spelling
(`legacy_digest`); idempotency checks accept either for them.

The `rfc8785` package is pure Python (about 1.5 ms for a 10 KB checkpoint).
For values where RFC 8785 and a plain JSON encoder spell every byte the same
— no floats (ECMAScript and Python print them differently), integers within
the I-JSON range, object keys without characters beyond the Basic
Multilingual Plane (UTF-16 and code-point order agree there), text that is
valid Unicode — orjson with sorted keys gives the same bytes (5 µs for 10 KB
where the standard library's `json.dumps(sort_keys=True, separators=(",",
":"), ensure_ascii=False)` took 55 µs; both escape exactly what RFC 8785
escapes, checked for every code point); anything else, and what orjson
refuses (a lone surrogate, nesting past its 254 levels), goes to `rfc8785`.
A property test holds the two to the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson
import rfc8785

MAX_SAFE_INTEGER = 2**53 - 1


def canonical_bytes(value: Any) -> bytes:
    if _plain(value):
        out = _plain_bytes(value)
        if out is not None:
            return out
    return rfc8785.dumps(value)


def _plain_bytes(value: Any) -> bytes | None:
    """orjson's bytes of data `_plain` took (the canonical bytes), or None where orjson
    refuses: a lone surrogate (which rfc8785 refuses too), nesting past 254 levels."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return None


def plain_text(value: Any, max_depth: int) -> str | None:
    """The canonical text of plain JSON data nested at most `max_depth` containers deep,
    from one walk; None for anything else (floats, other types, deeper data, a cycle,
    text that is not Unicode): the caller takes the slow path that names the problem."""
    if not _plain(value, max_depth):
        return None
    out = _plain_bytes(value)
    return None if out is None else out.decode()


def _plain(value: Any, max_depth: int | None = None) -> bool:
    """Whether a plain JSON encoder spells `value` exactly as RFC 8785 does (module doc),
    and (`max_depth`) no container is nested deeper than that.

    Containers are walked from a stack; their scalar children are checked in
    place, not pushed (a 10 KB checkpoint is mostly strings in lists).
    """
    if type(value) is not dict and type(value) is not list:
        return _plain_scalar(value)
    stack = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        item, depth = pop()
        if max_depth is not None and depth >= max_depth:
            return False
        if type(item) is dict:
            for key in item:
                if type(key) is not str or not (key.isascii() or _bmp(key)):
                    return False
            children: Any = item.values()
        else:
            children = item
        for child in children:
            kind = type(child)
            if kind is str or kind is bool or child is None:
                continue
            if kind is int:
                if -MAX_SAFE_INTEGER <= child <= MAX_SAFE_INTEGER:
                    continue
                return False
            if kind is dict or kind is list:
                push((child, depth + 1))
                continue
            return False  # floats, tuples, subclasses, anything else: rfc8785 decides
    return True


def _plain_scalar(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    return kind is int and -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER


def _bmp(text: str) -> bool:
    return max(map(ord, text)) <= 0xFFFF


def canonical_json(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def digest(value: Any) -> str:
    """sha256 hex of the RFC 8785 bytes of `value`."""
    return hashlib.sha256(canonical_bytes(value)).hexdigest()


def legacy_digest(value: Any, *, ensure_ascii: bool = False) -> str:
    """The digest rows written before RFC 8785 carry (sorted keys, `,` and `:`)."""
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()
