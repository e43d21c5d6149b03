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
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import rfc8785

MAX_SAFE_INTEGER = 2**53 - 1


def canonical_bytes(value: Any) -> bytes:
    return rfc8785.dumps(value)


def canonical_json(value: Any) -> str:
    return rfc8785.dumps(value).decode("utf-8")


def digest(value: Any) -> str:
    """sha256 hex of the RFC 8785 bytes of `value`."""
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def legacy_digest(value: Any, *, ensure_ascii: bool = False) -> str:
    """The digest rows written before RFC 8785 carry (sorted keys, `,` and `:`)."""
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=ensure_ascii, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()
