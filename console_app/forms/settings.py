"""Forms of the settings pages."""

from django import forms

from stateroom.leases import MAX_SESSION_LEASE_DAYS
from tenancy_app.models import Role
from tenancy_app.store import MAX_UNCLAIMED_WARNING

ON_OFF = [("on", "on"), ("off", "off")]


def _on(value: str) -> bool:
    return value == "on"


class LegalHoldForm(forms.Form):
    on = forms.TypedChoiceField(choices=ON_OFF, coerce=_on)
    reason = forms.CharField()  # its limit is the store's: MAX_HOLD_REASON_LENGTH
    confirm = forms.BooleanField(
        error_messages={"required": "Tick the box to confirm you mean it."}
    )


class FourEyesForm(forms.Form):
    on = forms.TypedChoiceField(choices=ON_OFF, coerce=_on)


class QuickApproveForm(forms.Form):
    max_risk = forms.ChoiceField(
        choices=[
            ("none", "Never: every approval opens the call first"),
            ("low", "Low risk only"),
            ("medium", "Low and medium risk"),
        ]
    )


class SessionLeaseForm(forms.Form):
    """The lease of new sessions, in days (every activity renews it for this long)."""

    days = forms.IntegerField(
        min_value=1, max_value=MAX_SESSION_LEASE_DAYS, label="Session lease (days)"
    )


class UnclaimedRunWarningForm(forms.Form):
    """How long a running run may go unheld before it is flagged, in minutes (up to a day)."""

    minutes = forms.IntegerField(
        min_value=1, max_value=MAX_UNCLAIMED_WARNING // 60, label="Minutes"
    )


class MemberForm(forms.Form):
    # No limit of its own: a longer name than the user model allows names nobody (not found).
    username = forms.CharField()
    role = forms.ChoiceField(choices=Role.choices)


def _days(label: str, minimum: int = 1) -> forms.IntegerField:
    return forms.IntegerField(label=label, required=False, min_value=minimum, max_value=36_500)


class RetentionForm(forms.Form):
    """Days after a session ends; blank keeps that data forever."""

    session_items_days = _days("Conversation items")
    run_events_days = _days("Run event payloads")
    checkpoints_days = _days("Checkpoint bodies")
    effect_payloads_days = _days("Effect payloads")
    extra_days_failed_or_approved = _days(
        "Extra days for sessions with failed runs or approvals", minimum=0
    )
