"""Forms of the approval pages: the decision, and the history's filter."""

import json
from datetime import UTC, datetime, time, timedelta

from django import forms

from approvals_app.models import ApprovalRequest, Decision, Risk
from approvals_app.store import ApprovalStore
from stateroom import jsongate
from stateroom.errors import Unprocessable


class DecisionForm(forms.Form):
    """One decision as the console posts it, bound to the call the page showed.

    Whether a reason is required, and how long a reason or a response may be,
    are the store's rules (it answers 422 with `details.reason`, `details.response`;
    MAX_DECISION_REASON_LENGTH, MAX_RESPONSE_LENGTH); the view maps that onto this form.
    """

    decision = forms.ChoiceField(choices=Decision.choices)
    reason = forms.CharField(required=False)
    approved_arguments = forms.CharField(required=False, max_length=200_000)
    response = forms.CharField(required=False)
    digest = forms.CharField(max_length=64)
    run_version = forms.IntegerField(min_value=1)
    source = forms.ChoiceField(required=False, choices=[("detail", "detail"), ("inbox", "inbox")])

    def __init__(self, *args, approval: ApprovalRequest, **kwargs):
        super().__init__(*args, **kwargs)
        self.approval = approval
        # An edit refused by the tool's schema: (argument path, messages), shown at the field.
        self.argument_errors: list[tuple[str, list[str]]] = []

    def clean_approved_arguments(self) -> dict | None:
        """The edited arguments (edit only), or None."""
        raw = self.cleaned_data["approved_arguments"].strip()
        if not raw or self.data.get("decision") != Decision.EDIT:
            return None
        try:
            value = json.loads(raw, parse_constant=_not_json)
        except ValueError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("The arguments must be a JSON object.")
        try:  # the API's rules for JSON (stateroom.jsongate): I-JSON numbers, storable text
            jsongate.check(value)
        except Unprocessable as exc:
            raise forms.ValidationError(exc.message) from exc
        return value

    def clean(self):
        data = super().clean()
        if data.get("decision") == Decision.EDIT and data.get("approved_arguments") == (
            self.approval.arguments
        ):
            # Nothing was edited: it is a plain approval.
            data["decision"], data["approved_arguments"] = Decision.APPROVE, None
        if data.get("decision") != Decision.RESPOND:
            data["response"] = None
        return data


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


# --- history -------------------------------------------------------------------
class HistoryFilterForm(forms.Form):
    tab = forms.ChoiceField(
        choices=[(t, t) for t in ApprovalStore.HISTORY_TABS], required=False, initial="decided"
    )
    risk = forms.ChoiceField(choices=[("", "Any risk"), *Risk.choices], required=False)
    # No limits of their own: a value longer than any tool, agent or decider can be matches
    # nothing (the page's maxlength is the owners': console_app.context_processors.limits).
    tool = forms.CharField(required=False, label="Tool")
    agent = forms.CharField(required=False, label="Agent")
    decider = forms.CharField(required=False, label="Decided by (starts with)")
    decision = forms.ChoiceField(choices=[("", "Any decision"), *Decision.choices], required=False)
    outcome = forms.ChoiceField(
        choices=[
            ("", "Approved, rejected or responded"),
            ("approved", "Approved"),
            ("rejected", "Rejected"),
            ("responded", "Responded"),
        ],
        required=False,
    )
    date_from = forms.DateField(required=False, label="From")
    date_to = forms.DateField(required=False, label="To")

    def store_filters(self) -> dict:
        data = self.cleaned_data
        return {
            "tab": data["tab"] or "decided",
            "risk": data["risk"] or None,
            "tool": data["tool"].strip() or None,
            "agent": data["agent"].strip() or None,
            "decider": data["decider"].strip() or None,
            "decision": data["decision"] or None,
            "outcome": data["outcome"] or None,
            "since": _day(data["date_from"]),
            "until": _day(data["date_to"], days=1),  # inclusive "to" date
        }


def _day(day, *, days: int = 0) -> datetime | None:
    if day is None:
        return None
    return datetime.combine(day + timedelta(days=days), time.min, tzinfo=UTC)
