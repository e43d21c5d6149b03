"""Content: what a runtime or an end user wrote, declared once by the app that stores it.

Every domain store (and the audit store) lists the content it keeps as
`ContentClass`es and offers two things for its own tables only:

- `content_left(name, containers)`: how many rows of that class still hold
  content ("rows still holding content"), for the plan, the preview and the
  last check before a receipt says "done"; for a class declared
  `append_only`, also `content_left(name, containers, after={container: key})`,
  which counts only past the key a sweep last reached in those containers;
- `redact_content(name, container, after=, limit=, now=)`: remove the content
  of at most `limit` rows of one container, in key order after `after`, in
  the caller's transaction; returns a `Batch`.

A container is what the rows hang off and are indexed by: a session, a run,
a task (their primary keys), or an audit subject (`("run", "run-1")`). The
lifecycle orchestrator (`lifecycle_app`) walks the containers of a session
through this registry and writes no table of its own domain stores.

What a class removes is either whole rows (conversation items, detached
audit payloads) or content fields, cleared in place while the row keeps its
ids, status, digests and times; `kept` says what stays and why, for the
receipt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

SESSION = "session"
RUN = "run"
TASK = "task"
SUBJECT = "subject"  # an audit target: (target_type, target_id)


@dataclass(frozen=True)
class ContentClass:
    name: str  # the key in plans, counts and receipts, e.g. "session_items"
    label: str  # for people
    table: str  # the table it touches
    fields: tuple[str, ...]  # the columns that carry content
    container: str  # SESSION, RUN, TASK or SUBJECT
    removal: str  # "rows deleted" or "fields cleared"
    retention: str  # the RetentionPolicy field whose days schedule it
    kept: str  # what stays of these rows, and why
    # Rows are only ever added, in growing key order under the container's lock,
    # and the deletion fence stops even that: once a sweep has removed every row
    # up to a key, none below it can hold content again, so the last check before
    # "done" starts there instead of walking the index entries of every row the
    # sweep deleted (a million for a million-item session, not yet vacuumed).
    append_only: bool = False

    def describe(self) -> dict[str, Any]:
        return {
            "class": self.name,
            "label": self.label,
            "table": self.table,
            "fields": list(self.fields),
            "removal": self.removal,
        }


@dataclass(frozen=True)
class Batch:
    """What one `redact_content` call did in one container.

    `count`: rows whose content it removed. `last`: the key of the last row
    it reached (the next call's `after`), or None when the container holds no
    more content after the cursor.
    """

    count: int
    last: Any | None


def redact_in_key_order(
    rows: QuerySet,
    key: str,
    *,
    after: Any,
    limit: int,
    remove: Callable[[QuerySet], int],
) -> Batch:
    """Remove the content of up to `limit` of `rows` whose `key` is past `after`.

    `rows` are one container's rows still holding content. Find the key of
    the `limit`-th of them after the cursor and clear the whole key range up
    to it in one statement (an index range, no list of ids); without such a
    row, clear the rest and report the container exhausted.
    """
    if after is not None:
        rows = rows.filter(**{f"{key}__gt": after})
    boundary = list(rows.order_by(key).values_list(key, flat=True)[limit - 1 : limit])
    if not boundary:
        return Batch(remove(rows), None)
    return Batch(remove(rows.filter(**{f"{key}__lte": boundary[0]})), boundary[0])


def content_class(classes: tuple[ContentClass, ...], name: str) -> ContentClass:
    for cls in classes:
        if cls.name == name:
            return cls
    raise ValueError(f"unknown content class {name!r}")
