"""What a member hears on which channel: their preference, or the default, and quiet hours.

`kinds_for(preference, risk)`: the channel kinds of the member's choice for
the call's risk (`Preference.by_risk`), else `DEFAULT_BY_RISK`. Quiet hours
(`quiet_start`..`quiet_end`, in the member's time zone) may wrap midnight
(22:00..07:00); the end is not quiet. During them only the console is told,
except of an escalation of a critical call (`held_back`).
"""

from __future__ import annotations

from datetime import datetime, time
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from approvals_app.notices import NOTICE_ESCALATED

from .models import ChannelKind, Preference

EMAIL, SLACK, WEBHOOK, CONSOLE = (k.value for k in ChannelKind)

DEFAULT_BY_RISK: dict[str, tuple[str, ...]] = {
    "critical": (EMAIL, SLACK, CONSOLE),
    "high": (EMAIL, SLACK, CONSOLE),
    "medium": (EMAIL, CONSOLE),
    "low": (CONSOLE,),
}


def kinds_for(preference: Preference | None, risk: str) -> tuple[str, ...]:
    """The channel kinds a member chose for `risk` (the default when they chose none)."""
    chosen = (preference.by_risk or {}).get(risk) if preference is not None else None
    if isinstance(chosen, list):
        return tuple(k for k in ChannelKind.values if k in chosen)
    return DEFAULT_BY_RISK.get(risk, (CONSOLE,))


def in_quiet_hours(preference: Preference | None, now: datetime) -> bool:
    """Whether `now` falls in the member's quiet hours, read in their time zone."""
    if preference is None or preference.quiet_start is None or preference.quiet_end is None:
        return False
    try:
        zone = ZoneInfo(preference.time_zone or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    local = now.astimezone(zone).time().replace(tzinfo=None)
    return _between(local, preference.quiet_start, preference.quiet_end)


def _between(moment: time, start: time, end: time) -> bool:
    if start == end:
        return False
    if start < end:
        return start <= moment < end
    return moment >= start or moment < end  # wraps midnight


def held_back(kind: str, *, quiet: bool, notice: str, risk: str) -> bool:
    """Quiet hours hold back every channel but the console, except a critical escalation."""
    if not quiet or kind == CONSOLE:
        return False
    return not (notice == NOTICE_ESCALATED and risk == "critical")
