"""Logging: a refused request is one line, not a traceback.

Django logs every 4xx answered from an exception (`Http404`,
`PermissionDenied`, a refused CSRF check) through `django.request` with the
exception's traceback attached. For a client's mistake that is noise: the
demo's console filled with a traceback per 403 and 404, which hid the lines
that mattered. A 5xx keeps its traceback.
"""

from __future__ import annotations

import logging


class ClientErrorsWithoutTraceback(logging.Filter):
    """Drop the traceback of a request record whose answer was a 4xx."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
        return True
