"""The general JSON rules: what durable data may be, and how deep any JSON may nest.

What survives a process must be plain JSON: versionable domain facts and
resource identifiers. Sockets, locks, file handles, coroutines, threads and
clients cannot be carried to another process or version; they are re-created
on resume, so storing them is refused (`not_serializable`) rather than pickled.

`MAX_DEPTH` is also the API's body limit (`stateroom.jsongate`); the I-JSON
integer bound is `stateroom.canonical.MAX_SAFE_INTEGER`.
"""

from __future__ import annotations

import math
import re
from typing import Any

import rfc8785

from stateroom.canonical import MAX_SAFE_INTEGER, canonical_bytes, plain_text
from stateroom.errors import Unprocessable

# Deeper than this is almost surely a cycle (a list holding itself) or a runaway structure.
MAX_DEPTH = 64


def _type_name(value: Any) -> str:
    klass = type(value)
    module = klass.__module__
    return klass.__qualname__ if module == "builtins" else f"{module}.{klass.__qualname__}"


def _refuse(path: str, value: Any, why: str) -> Unprocessable:
    return Unprocessable(
        f"{path} is {why}: durable state holds only JSON domain data and resource "
        "identifiers; re-create connections, clients, locks and tasks on resume.",
        code="not_serializable",
        details={"path": path, "type": _type_name(value)},
    )


_SCALARS = frozenset({str, int, bool, type(None)})


def _is_plain(value: Any, depth: int = 0) -> bool:
    """True for plain JSON data of exactly the builtin types (no path kept: the hot path)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= MAX_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return False
            if type(item) not in _SCALARS and not _is_plain(item, depth + 1):
                return False
        return True
    if kind is list:
        for item in value:
            if type(item) not in _SCALARS and not _is_plain(item, depth + 1):
                return False
        return True
    return False


def ensure_domain_data(value: Any, path: str = "state") -> None:
    """Raise 422 `not_serializable` naming the first value that is not plain JSON.

    Only dict (with str keys), list, str, int, float (finite), bool and None
    pass; everything else, including tuples, sets and bytes, is refused, so
    what is stored reads back exactly as it was written. Plain data passes a
    quick walk; only data that fails it is walked again to name the path.
    """
    if not _is_plain(value):
        _find_refusal(value, path)


def _find_refusal(value: Any, path: str, _depth: int = 0) -> None:
    if _depth > MAX_DEPTH:
        raise _refuse(path, value, f"nested deeper than {MAX_DEPTH} levels (or cyclic)")
    if value is None or isinstance(value, bool | int | str):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _refuse(path, value, "not a finite number")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise _refuse(f"{path}[{key!r}]", key, f"keyed by a {_type_name(key)}")
            _find_refusal(item, f"{path}.{key}", _depth + 1)
        return
    if isinstance(value, list):
        for index, item in enumerate(value):
            _find_refusal(item, f"{path}[{index}]", _depth + 1)
        return
    raise _refuse(path, value, f"a {_type_name(value)}, not JSON data")


# A NUL character in canonical JSON text: `\u0000` after an even run of backslashes.
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def storable_json(value: Any, path: str = "state") -> str:
    """The canonical JSON of plain domain data that PostgreSQL's jsonb can store.

    `ensure_domain_data`, then the text: jsonb holds no NUL character and no
    lone surrogate (Python's json module lets both through), so either is
    refused as `not_serializable` naming the string, not left to fail in the
    database. Returns the text, which callers store and measure as it is.
    """
    text = plain_text(value, MAX_DEPTH)  # the common case: one walk and the C encoder
    if text is None:
        ensure_domain_data(value, path)
        text = canonical_data(value, path).decode()
    if "\\u0000" in text and _NUL.search(text):  # the regex only when a NUL may be there
        _find_bad_text(value, path)
    return text


def canonical_data(value: Any, path: str) -> bytes:
    """The RFC 8785 bytes of plain data, or 422 `not_serializable` naming the value that has
    none: text that is not Unicode, or an integer beyond what JSON readers keep exactly."""
    try:
        return canonical_bytes(value)
    except rfc8785.CanonicalizationError:
        _find_bad_text(value, path)
        _find_big_integer(value, path)
        raise


def _find_big_integer(value: Any, path: str) -> None:
    if type(value) is int and abs(value) > MAX_SAFE_INTEGER:
        raise _refuse(
            path, value, "an integer beyond ±(2**53 - 1), which JSON does not keep exactly"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _find_big_integer(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _find_big_integer(item, f"{path}[{index}]")


def _encodes(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _find_bad_text(value: Any, path: str) -> None:
    if isinstance(value, str):
        if "\x00" in value:
            raise _refuse(path, value, "text with a NUL character, which PostgreSQL cannot store")
        if not _encodes(value):
            raise _refuse(path, value, "text with a lone surrogate, not valid Unicode")
    elif isinstance(value, dict):
        for key, item in value.items():
            _find_bad_text(key, f"{path}[{key!r}]")
            _find_bad_text(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _find_bad_text(item, f"{path}[{index}]")


__all__ = ["MAX_DEPTH", "ensure_domain_data", "storable_json"]
