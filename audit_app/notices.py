"""Security notices: facts about the deployment, kept outside every tenant's audit log.

A web process notes what it saw (`note`), at most once per key and
`NOTE_EVERY` seconds per cache; a deploy check reads it back (`seen`).
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.cache import cache
from django.db import DatabaseError
from django.utils import timezone

from .models import SecurityNotice

logger = logging.getLogger("stateroom.security")

# A notice is refreshed at most this often: the request that notices must not pay
# for a database write each time.
NOTE_EVERY = 3600


def note(key: str, detail: dict[str, Any]) -> bool:
    """Record that `key` was seen now; whether this call wrote (else it was noted recently)."""
    try:
        fresh = cache.add(f"security-notice:{key}", 1, timeout=NOTE_EVERY)
    except Exception:  # the shared cache is down: note it anyway, once is enough
        fresh = True
    if not fresh:
        return False
    now = timezone.now()
    try:
        _, created = SecurityNotice.objects.get_or_create(
            key=key, defaults={"first_seen_at": now, "last_seen_at": now, "detail": detail}
        )
        if not created:
            SecurityNotice.objects.filter(key=key).update(last_seen_at=now, detail=detail)
    except DatabaseError:  # the request goes on; the log line below still tells
        logger.exception("could not record the security notice %s", key)
    logger.warning("security notice %s: %s", key, detail)
    return True


def seen(key: str) -> SecurityNotice | None:
    """The notice of that kind, if a process ever noted it."""
    return SecurityNotice.objects.filter(key=key).first()
