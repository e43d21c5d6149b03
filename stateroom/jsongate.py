"""The one gate every API request body passes before any serializer or store sees it.

A body is refused when it is not what PostgreSQL's jsonb and the stores can
hold, with the error shape and without a 5xx:

- 400 `invalid_encoding`: a UTF-8 byte order mark, or bytes that are not UTF-8.
- 400 `malformed_json`: not JSON text (`NaN` and `Infinity` included, which
  Python reads but JSON and jsonb do not have), or not an object (`body_not_object`).
- 422 `invalid_text`: a string or key with a NUL character or a lone surrogate
  (both only reachable through `\\u` escapes); `details` names its path, e.g.
  `items[3].payload.text`.
- 422 `duplicate_key`: an object with the same key twice (which one would win
  is the parser's choice, not the caller's).
- 422 `nesting_too_deep` / `too_many_keys`: deeper than `MAX_DEPTH` objects and
  arrays, or an object with more than `MAX_KEYS` keys.
- 422 `number_out_of_range`: not an I-JSON number (RFC 7493). The one rule:
  a number, however it is written, must lie within ±(2**53 - 1) and be finite.
  `9007199254740993`, `1e16`, `9007199254740992.0` and `1.5e300` are refused
  as well as `1e400` (too large to be finite): every double of magnitude 2**53
  or more is an integer, jsonb stores `1e16` as the integer literal
  `10000000000000000`, and an integer that large is one no JSON reader need
  keep exactly and RFC 8785 (the `rfc8785` package) refuses, so a digest
  could not be recomputed from what is read back. Every other number comes
  back from jsonb as the same value (`0.1`, `1.0`, `-0.0` as `0.0`, the
  subnormal `1e-320`), with the same canonical JSON (RFC 8785,
  `stateroom.canonical`): a digest taken of the request is the digest of
  what is stored and returned.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .canonical import MAX_SAFE_INTEGER
from .errors import StateroomError, Unprocessable
from .jsondata import MAX_DEPTH

MAX_KEYS = 1000
_BOM = b"\xef\xbb\xbf"
_PATH_CHARS = 200


class BadBody(StateroomError):
    status = 400
    code = "malformed_json"


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return obj


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def parse_object(raw: bytes) -> dict[str, Any]:
    """The JSON object in `raw`, or a refusal (see the module docstring). Empty reads as `{}`."""
    if raw.startswith(_BOM):
        raise BadBody(
            "The body starts with a byte order mark; send UTF-8 JSON without one.",
            code="invalid_encoding",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadBody(
            f"The body is not UTF-8 (byte {exc.start}).",
            code="invalid_encoding",
            details={"position": exc.start},
        ) from exc
    if not text.strip():
        return {}
    try:
        data = json.loads(text, object_pairs_hook=_pairs, parse_constant=_no_constants)
    except RecursionError as exc:
        raise _too_deep("") from exc
    except _DuplicateKey as exc:
        raise Unprocessable(
            "An object has the same key twice.",
            code="duplicate_key",
            details={"body": [f"duplicate key {exc.key[:_PATH_CHARS]!r}"]},
        ) from exc
    except ValueError as exc:
        raise BadBody(f"Malformed JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadBody("The request body must be a JSON object.", code="body_not_object")
    check(data, text_escapes="\\u" in text)
    return data


def check(value: Any, *, text_escapes: bool = True) -> None:
    """Refuse NUL, lone surrogates, depth over MAX_DEPTH, objects over MAX_KEYS (422).

    `text_escapes=False` says the JSON text had no `\\u` escape, so no string
    can hold a NUL or a surrogate (raw ones are not valid JSON or UTF-8): only
    the shape and the numbers are checked. Numbers are always checked: a
    regular expression that looked for a long or exponent number in the text
    first cost ~0.3 ms on a 10 KB body, ten times the walk. The walk keeps no
    paths: only when it finds a problem is the value walked again to name
    where.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > MAX_DEPTH or (type(node) is dict and len(node) > MAX_KEYS):
            _explain(value, text_escapes)
        children = node.values() if type(node) is dict else node
        if text_escapes and type(node) is dict:
            for key in node:
                if text_problem(key):
                    _explain(value, text_escapes)
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))
            elif (text_escapes and kind is str and text_problem(child)) or (
                (kind is int or kind is float) and number_problem(child)
            ):
                _explain(value, text_escapes)


def _explain(value: Any, text_escapes: bool) -> None:
    """Walk again with paths and raise the refusal for the first problem found."""
    stack: list[tuple[Any, str, int]] = [(value, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(path)
        if isinstance(node, dict):
            if len(node) > MAX_KEYS:
                raise Unprocessable(
                    f"An object has more than {MAX_KEYS} keys.",
                    code="too_many_keys",
                    details={_shown(path) or "body": [f"more than {MAX_KEYS} keys"]},
                )
            pairs = [(f"{path}.{key}" if path else key, key, child) for key, child in node.items()]
        else:
            pairs = [(f"{path}[{index}]", None, child) for index, child in enumerate(node)]
        for child_path, key, child in pairs:
            if text_escapes and key is not None:
                _check_text(key, child_path, what="key")
            if isinstance(child, dict | list):
                stack.append((child, child_path, depth + 1))
            elif text_escapes and isinstance(child, str):
                _check_text(child, child_path)
            elif type(child) in (int, float) and (problem := number_problem(child)):
                shown = _shown(child_path)
                raise Unprocessable(
                    f"The number at {shown} {problem}.",
                    code="number_out_of_range",
                    details={shown: [problem]},
                )
    raise AssertionError("check() found a problem that _explain() did not")  # pragma: no cover


def number_problem(number: int | float) -> str | None:
    """Why `number` is not I-JSON (the module docstring's one rule), or None."""
    if type(number) is float and not math.isfinite(number):
        return "is too large to be a finite number"
    if not -MAX_SAFE_INTEGER <= number <= MAX_SAFE_INTEGER:
        # A float this large is a whole number too: jsonb keeps it as an integer literal.
        return "is outside ±(2**53 - 1), the integers every JSON reader keeps exactly"
    return None


def text_problem(text: str) -> str | None:
    """Why PostgreSQL cannot store `text`, or None."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains a lone surrogate (not valid Unicode)"
    return None


def _check_text(text: str, path: str, *, what: str = "text") -> None:
    problem = text_problem(text)
    if problem:
        shown = _shown(path)
        raise Unprocessable(
            f"The {what} at {shown} {problem}.",
            code="invalid_text",
            details={shown: [problem]},
        )


def _shown(path: str) -> str:
    """A path as it can be shown: printable, and not longer than _PATH_CHARS."""
    safe = path.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")
    return safe if len(safe) <= _PATH_CHARS else safe[:_PATH_CHARS] + "…"


def _too_deep(path: str) -> Unprocessable:
    return Unprocessable(
        f"The body nests objects and arrays deeper than {MAX_DEPTH} levels.",
        code="nesting_too_deep",
        details={_shown(path) or "body": [f"deeper than {MAX_DEPTH} levels"]},
    )
