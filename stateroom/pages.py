"""Keyset pages for console lists (the API's counterpart is `stateroom.api.keyset_page`).

A page is rows with `id` below the cursor, newest first, plus one extra row
to know whether a next page exists: one index range scan however deep the
reader goes (no OFFSET).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import QueryDict

PAGE_SIZE = 50


@dataclass(frozen=True)
class Page:
    rows: list[Any]
    next_query: str | None  # the query string of the next page, or None on the last page


def parse_cursor(raw: str | None) -> int | None:
    """A cursor from the query string; anything but a positive integer reads as "first page"."""
    try:
        value = int(raw or "")
    except ValueError:
        return None
    return value if value > 0 else None


def keyset_page(
    queryset: QuerySet, params: QueryDict, *, size: int = PAGE_SIZE, cursor_param: str = "cursor"
) -> Page:
    cursor = parse_cursor(params.get(cursor_param))
    if cursor is not None:
        queryset = queryset.filter(id__lt=cursor)
    rows = list(queryset.order_by("-id")[: size + 1])
    if len(rows) <= size:
        return Page(rows, None)
    rows = rows[:size]
    query = params.copy()
    query[cursor_param] = str(rows[-1].id)
    return Page(rows, query.urlencode())
