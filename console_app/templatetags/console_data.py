"""Template filters for the data pages (sessions, runs, tasks, effects)."""

from __future__ import annotations

import logging
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from console_app.chat import ChatMessage
from console_app.chat import as_chat as _as_chat
from console_app.timeline import item_text
from stateroom.jsonview import compact, highlight_json
from stateroom.jsonview import json_tree as _json_tree

register = template.Library()
logger = logging.getLogger(__name__)


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


@register.simple_tag(takes_context=True)
def include_row(context: template.Context, template_name: str, **values: Any) -> SafeString:
    """`{% include %}` for one row of a list, which no stored row can break.

    A row is whatever a runtime stored (a payload, a tool call's arguments as
    text, nested as deep as it liked): one that fails to render is shown as
    such and logged, and the rest of the page renders.
    """
    row = context.template.engine.get_template(template_name)
    try:
        with context.push(**values):
            return mark_safe(row.render(context))  # the row's template escaped what it shows
    except Exception:
        logger.exception("A row of %s could not be rendered", template_name)
        return format_html(
            '<p class="notice bad small" data-testid="unrenderable-row">{}</p>',
            "This row cannot be shown here; the error is logged.",
        )
