"""Template filters for the data pages (sessions, runs, tasks, effects)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from console_app.chat import ChatMessage
from console_app.chat import as_chat as _as_chat
from console_app.timeline import item_text
from stateroom.jsonview import compact, highlight_json
from stateroom.jsonview import json_tree as _json_tree

register = template.Library()


@register.filter
def json_html(value: Any) -> SafeString:
    """Pretty, highlighted JSON; Pygments escapes every token, so agent text stays text."""
    return highlight_json(value)


@register.filter
def json_short(value: Any, length: int = 160) -> str:
    """One-line JSON for table cells (escaped by the template as usual)."""
    text = compact(value)
    return text if len(text) <= length else text[: length - 1] + "…"


register.filter("item_text", item_text)


@register.filter
def percent(part: int | float, whole: int | float) -> int:
    return int(100 * part / whole) if whole else 0


@register.filter
def as_chat(item: Any) -> ChatMessage:
    """The chat view of a conversation item (console_app.chat)."""
    return _as_chat(item.role, item.item_type, item.payload)


@register.filter
def json_tree(value: Any) -> SafeString:
    """A JSON value as a wrapped, escaped key/value tree (stateroom.jsonview.json_tree)."""
    return _json_tree(value)
