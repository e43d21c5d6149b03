"""The dashboard's range picker: the range and the time zone, both kept in the URL."""

from __future__ import annotations

from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from django import forms

from console_app.selectors.dashboard import DEFAULT_RANGE, RANGES

RANGE_LABELS = {"24h": "Last 24 hours", "7d": "Last 7 days", "30d": "Last 30 days"}


@cache
def zone_names() -> frozenset[str]:
    return frozenset(available_timezones())


class DashboardForm(forms.Form):
    range = forms.ChoiceField(
        choices=[(key, RANGE_LABELS[key]) for key in RANGES], required=False, label="Range"
    )
    # Days are this zone's calendar days (the console shows times in UTC; a viewer
    # elsewhere picks their own zone, e.g. Europe/Paris).
    tz = forms.CharField(required=False, max_length=64, label="Time zone")

    def clean_range(self) -> str:
        return self.cleaned_data["range"] or DEFAULT_RANGE

    def clean_tz(self) -> ZoneInfo:
        name = self.cleaned_data["tz"].strip() or "UTC"
        if name not in zone_names():
            raise forms.ValidationError("Not a time zone of the IANA database (e.g. Europe/Paris).")
        return ZoneInfo(name)
