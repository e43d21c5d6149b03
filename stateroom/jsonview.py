"""JSON shown to people: syntax-highlighted (escaped by Pygments) and key-wise diffs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import JsonLexer

_FORMATTER = HtmlFormatter(nowrap=True)
_LEXER = JsonLexer()
_MISSING = object()


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def highlight_json(value: Any) -> SafeString:
    """Pretty JSON as HTML spans; Pygments escapes every token it emits."""
    return mark_safe(highlight(pretty(value), _LEXER, _FORMATTER))


@dataclass(frozen=True)
class Change:
    path: str
    kind: str  # added | removed | changed
    old: str = ""
    new: str = ""


def diff(before: Any, after: Any, path: str = "") -> list[Change]:
    """What changed between two JSON values, by key path (`a.b[2]`); lists compare by index."""
    if isinstance(before, dict) and isinstance(after, dict):
        changes: list[Change] = []
        for key in sorted(set(before) | set(after), key=str):
            sub = f"{path}.{key}" if path else str(key)
            changes += _diff_one(before.get(key, _MISSING), after.get(key, _MISSING), sub)
        return changes
    if isinstance(before, list) and isinstance(after, list):
        changes = []
        for i in range(max(len(before), len(after))):
            old = before[i] if i < len(before) else _MISSING
            new = after[i] if i < len(after) else _MISSING
            changes += _diff_one(old, new, f"{path}[{i}]")
        return changes
    return _diff_one(before, after, path or "(value)")


def _diff_one(old: Any, new: Any, path: str) -> list[Change]:
    # A whole object added or removed reads better key by key (`error.code`, ...).
    if old is _MISSING:
        if isinstance(new, dict) and new:
            return diff({}, new, path)
        return [Change(path, "added", new=compact(new))]
    if new is _MISSING:
        if isinstance(old, dict) and old:
            return diff(old, {}, path)
        return [Change(path, "removed", old=compact(old))]
    if isinstance(old, dict | list) and type(old) is type(new):
        return diff(old, new, path)
    if old == new and type(old) is type(new):
        return []
    return [Change(path, "changed", old=compact(old), new=compact(new))]
