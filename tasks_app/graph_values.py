"""LangGraph values as the console shows them (read-only; nothing is imported or run).

A value stored as JSON is shown as it is. A value LangGraph's serializer
packed as msgpack is unpacked as data with `ormsgpack`: its extension types
(dataclasses, pydantic models, namedtuples...) become
`{"__type__": "module.Name", "value": <their fields>}`, so an interrupt's
request reads as what the graph asked. Anything else shows its type and size.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import ormsgpack

JSON_TYPE = "json"
MSGPACK_TYPE = "msgpack"
# LangGraph's msgpack extension codes (langgraph.checkpoint.serde.jsonplus).
_NAMED_EXTS = frozenset({0, 1, 2, 3, 4, 5})


@dataclass(frozen=True)
class Shown:
    readable: bool
    value: Any
    type: str
    size: int


def _ext(code: int, data: bytes) -> Any:
    unpacked = ormsgpack.unpackb(data, ext_hook=_ext)
    if code in _NAMED_EXTS and isinstance(unpacked, list | tuple) and len(unpacked) >= 3:
        module, name, value = unpacked[0], unpacked[1], unpacked[2]
        return {"__type__": f"{module}.{name}", "value": value}
    return {"__ext__": code, "value": unpacked}


def show(item: dict[str, Any]) -> Shown:
    """A channel value or pending write as read by the store (`type`, `value`, base64 `data`)."""
    kind = item.get("type") or ""
    if kind == JSON_TYPE:
        return Shown(True, item.get("value"), kind, 0)
    raw = base64.b64decode(item.get("data") or "")
    if kind == MSGPACK_TYPE:
        try:
            return Shown(True, ormsgpack.unpackb(raw, ext_hook=_ext), kind, len(raw))
        except (ormsgpack.MsgpackDecodeError, ValueError, TypeError):
            pass
    if kind == "null":
        return Shown(True, None, kind, 0)
    return Shown(False, None, kind, len(raw))
