"""`session_items_out` gives exactly what the `SessionItemOut` serializer gives."""

import json
from datetime import UTC, datetime, timedelta
from datetime import timezone as dt_timezone

from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from sessions_app.models import SessionItem
from sessions_app.serializers import SessionItemOut, session_items_out
from sessions_app.store import StoredItem

Row = StoredItem  # what SessionStore.get_items returns


ROWS = [
    Row(
        1,
        "user",
        "message",
        {"text": "hi", "n": [1, 2.5, None], "ü": "é"},
        "",
        datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
    ),
    Row(2, "assistant", "tool_call", {}, "run-1", datetime(2026, 1, 2, 3, 4, 6, tzinfo=UTC)),
    Row(
        3,
        "tool",
        "x",
        {"k": {"deep": True}},
        "run-1",
        datetime(2026, 6, 1, 12, 0, tzinfo=dt_timezone(timedelta(hours=2))),
    ),
]


def same(rows) -> None:
    expected = SessionItemOut(rows, many=True).data
    got = session_items_out(rows)
    assert got == expected
    assert JSONRenderer().render({"results": got}) == JSONRenderer().render({"results": expected})


def test_rows_and_model_instances_render_as_the_serializer_does():
    same(ROWS)
    same([SessionItem(session_id=1, tenant_id=1, **vars(row)) for row in ROWS])
    assert session_items_out(ROWS)[0]["created_at"] == "2026-01-02T03:04:05.678901Z"
    assert session_items_out(ROWS)[2]["created_at"] == "2026-06-01T10:00:00Z"


def test_other_current_time_zone_and_naive_datetimes():
    with timezone.override("Europe/Berlin"):
        same(ROWS)
        assert session_items_out(ROWS)[0]["created_at"] == "2026-01-02T04:04:05.678901+01:00"
    naive = [Row(1, "user", "m", {}, "", datetime(2026, 1, 2, 3, 4, 5))]
    same(naive)


def test_empty_page():
    assert session_items_out([]) == [] == SessionItemOut([], many=True).data
    assert json.loads(JSONRenderer().render({"results": session_items_out([])})) == {"results": []}
