"""JSON shown to people: syntax-highlighted (escaped by Pygments) and key-wise diffs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils.html import format_html, format_html_join
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


# --- JSON as a wrapped key/value tree (agent text: every value escaped) ----------------
FOLD_CHARS = 160
FOLD_ITEMS = 8


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def short(value: Any, limit: int) -> str:
    """One line of at most `limit` characters (whitespace collapsed)."""
    text = " ".join(_text(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_tree(value: Any) -> SafeString:
    """A value as nested <dl>/<ol> in its own key order; long strings and big containers
    folded in <details>. Every key and value goes through format_html (escaped)."""
    if isinstance(value, dict):
        if not value:
            return mark_safe('<span class="mono">{}</span>')
        inner = format_html_join(
            "", '<dt class="mono">{}</dt><dd>{}</dd>', ((k, json_tree(v)) for k, v in value.items())
        )
        return _fold(format_html('<dl class="argtree">{}</dl>', inner), len(value), "keys")
    if isinstance(value, list):
        if not value:
            return mark_safe('<span class="mono">[]</span>')
        inner = format_html_join("", "<li>{}</li>", ((json_tree(v),) for v in value))
        return _fold(format_html('<ol class="argtree-list">{}</ol>', inner), len(value), "items")
    text = _text(value)
    css = "argval" if isinstance(value, str) else "argval mono"
    if len(text) <= FOLD_CHARS:
        return format_html('<span class="{}">{}</span>', css, text)
    return format_html(
        '<details class="fold"><summary><span class="{}">{}</span> '
        '<span class="muted small">({} characters: show all)</span></summary>'
        '<div class="{}">{}</div></details>',
        css,
        text[:FOLD_CHARS] + "…",
        len(text),
        css,
        text,
    )


def _fold(html: SafeString, size: int, what: str) -> SafeString:
    if size <= FOLD_ITEMS:
        return html
    return format_html(
        '<details class="fold"><summary class="muted">{} {} (show)</summary>{}</details>',
        size,
        what,
        html,
    )
