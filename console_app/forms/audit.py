"""Forms of the audit log pages."""

from datetime import datetime, time, timedelta

from django import forms
from django.utils import timezone

from audit_app.models import AuditEvent


def _length(field: str) -> int:
    return AuditEvent._meta.get_field(field).max_length


class AuditFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=_length("actor_label"))
    action = forms.CharField(required=False, max_length=_length("action"))
    target_type = forms.CharField(required=False, max_length=_length("target_type"))
    target_id = forms.CharField(required=False, max_length=_length("target_id"))
    date_from = forms.DateField(required=False, label="From")
    date_to = forms.DateField(required=False, label="To")

    def clean(self):
        data = super().clean()
        start, end = data.get("date_from"), data.get("date_to")
        if start and end and end < start:
            self.add_error("date_to", "must not be before From")
        return data

    def store_filters(self) -> dict:
        """Keyword arguments of `AuditStore.list_events` (dates are whole days, UTC)."""
        data = self.cleaned_data
        tz = timezone.get_current_timezone()
        start, end = data.get("date_from"), data.get("date_to")
        return {
            "actor": data.get("actor", "").strip(),
            "action": data.get("action", "").strip(),
            "target_type": data.get("target_type", "").strip(),
            "target_id": data.get("target_id", "").strip(),
            "created_from": datetime.combine(start, time.min, tz) if start else None,
            "created_to": datetime.combine(end + timedelta(days=1), time.min, tz) if end else None,
        }
