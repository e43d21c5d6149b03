"""Keyset pages for console lists; `keyset_slice` is the read the API's `keyset_page` shares.

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


def keyset_slice(
    queryset: QuerySet, *, cursor: int | None, size: int, key: str = "id"
) -> tuple[list[Any], bool]:
    """Up to `size` rows with `key` below `cursor`, newest first, and whether more follow.

    The one keyset read of the console and the API: one extra row tells
    whether a next page exists, and each page is one indexed range scan.
    """
    if cursor is not None:
        queryset = queryset.filter(**{f"{key}__lt": cursor})
    rows = list(queryset.order_by(f"-{key}")[: size + 1])
    return rows[:size], len(rows) > size


def keyset_page(
    queryset: QuerySet, params: QueryDict, *, size: int = PAGE_SIZE, cursor_param: str = "cursor"
) -> Page:
    rows, more = keyset_slice(queryset, cursor=parse_cursor(params.get(cursor_param)), size=size)
    if not more:
        return Page(rows, None)
    query = params.copy()
    query[cursor_param] = str(rows[-1].id)
    return Page(rows, query.urlencode())
