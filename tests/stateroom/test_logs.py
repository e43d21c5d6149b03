"""A refused request is logged as one line: no traceback for a 403 or a 404, one for a 500."""

import logging
import sys

from stateroom.logs import ClientErrorsWithoutTraceback
from tests.conftest import login


def request_records(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("django.request")]


def test_a_404_and_a_403_are_logged_without_a_traceback(caplog, support_a, admin_b):
    with caplog.at_level(logging.WARNING, logger="django.request"):
        assert login(support_a).get("/t/acme/settings/").status_code == 403  # PermissionDenied
        assert login(admin_b).get("/t/acme/settings/").status_code == 404  # another tenant
        assert login(support_a).get("/t/acme/no-such-page/").status_code == 404
    records = request_records(caplog)
    assert [(r.getMessage(), r.status_code) for r in records] == [
        ("Forbidden (Permission denied): /t/acme/settings/", 403),
        ("Not Found: /t/acme/settings/", 404),
        ("Not Found: /t/acme/no-such-page/", 404),
    ]
    assert [r.exc_info for r in records] == [None, None, None]
    assert "Traceback" not in caplog.text


def test_a_server_error_keeps_its_traceback():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        exc_info = sys.exc_info()
    records = []
    for status in (500, 503, 404):
        record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "x", (), exc_info)
        record.status_code = status
        assert ClientErrorsWithoutTraceback().filter(record) is True
        records.append(record.exc_info)
    assert records == [exc_info, exc_info, None]
