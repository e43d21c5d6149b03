"""Forms of the run pages."""

from __future__ import annotations

from django import forms

from runs_app.models import RunStatus
from stateroom.ids import MAX_PUBLIC_ID_LENGTH


class RunFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *RunStatus.choices], required=False)
    session_id = forms.CharField(
        required=False, max_length=MAX_PUBLIC_ID_LENGTH, label="Session id"
    )
    # Running runs no worker holds for longer than the tenant's setting (Run.unclaimed_since).
    unclaimed = forms.BooleanField(required=False, label="Waiting for a worker")

    def store_filters(self) -> dict:
        return {
            "status": self.cleaned_data["status"] or None,
            "session_id": self.cleaned_data["session_id"].strip() or None,
            "unclaimed": self.cleaned_data["unclaimed"],
        }


# A reason's limit is the run store's (MAX_REASON_LENGTH): it refuses, the form shows why.
class ControlForm(forms.Form):
    reason = forms.CharField(label="Reason (recorded in the audit log)")
    expected_version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)


class BulkControlForm(forms.Form):
    reason = forms.CharField()
    expected_count = forms.IntegerField(min_value=0)
