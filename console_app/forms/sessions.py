"""Forms of the session pages."""

from datetime import UTC, datetime, time, timedelta

from django import forms

from sessions_app.models import SessionStatus
from sessions_app.store import MAX_USER_ID_LENGTH
from stateroom.ids import MAX_PUBLIC_ID_LENGTH


class ReasonForm(forms.Form):
    # Its limit is the stores' (sessions_app.store.MAX_REASON_LENGTH): they refuse, it shows why.
    reason = forms.CharField(widget=forms.Textarea, strip=True)


class SessionFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *SessionStatus.choices], required=False)
    user_id = forms.CharField(required=False, max_length=MAX_USER_ID_LENGTH, label="User id")
    created_from = forms.DateField(required=False, label="Created from")
    created_to = forms.DateField(required=False, label="Created to")
    q = forms.CharField(required=False, max_length=MAX_PUBLIC_ID_LENGTH, label="Session or run id")

    def store_filters(self) -> dict:
        """The filters as `SessionStore.list_sessions` takes them (dates as UTC day bounds)."""
        data = self.cleaned_data
        return {
            "status": data["status"] or None,
            "user_id": data["user_id"].strip() or None,
            "created_from": _day_start(data["created_from"]),
            # Inclusive "to" date: everything before the next day starts.
            "created_to": _day_start(data["created_to"], days=1),
            "search": data["q"].strip() or None,
        }


def _day_start(day, *, days: int = 0) -> datetime | None:
    if day is None:
        return None
    return datetime.combine(day + timedelta(days=days), time.min, tzinfo=UTC)


class BulkForm(ReasonForm):
    action = forms.ChoiceField(choices=[("close", "Close"), ("expire", "Expire")])
    expected_count = forms.IntegerField(min_value=0)
