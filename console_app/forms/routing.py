"""Forms of the routing pages: member groups, routing rules and the dry-run preview.

The stores check the rules (names, members of the tenant, limits); these forms
only turn the page's fields into the stores' arguments.
"""

from __future__ import annotations

from django import forms

from approvals_app.models import Risk


def parse_metadata(text: str) -> dict[str, str]:
    """`key=value` lines as a dict (blank lines ignored); ValidationError on a bad line."""
    found: dict[str, str] = {}
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise forms.ValidationError(f"line {number}: write key=value")
        found[key.strip()] = value.strip()
    return found


def metadata_text(metadata: dict) -> str:
    return "\n".join(f"{key}={value}" for key, value in (metadata or {}).items())


class GroupForm(forms.Form):
    name = forms.CharField(max_length=200)
    members = forms.CharField(
        required=False,
        widget=forms.Textarea,
        help_text="Usernames, one a line, in on-call order.",
    )
    rotation_days = forms.IntegerField(required=False, min_value=1)

    def __init__(self, *args, usernames: dict[str, int], **kwargs):
        super().__init__(*args, **kwargs)
        self.usernames = usernames

    def clean_members(self) -> list[int]:
        names = [n.strip() for n in self.cleaned_data["members"].splitlines() if n.strip()]
        unknown = [n for n in names if n not in self.usernames]
        if unknown:
            raise forms.ValidationError(f"not members of this tenant: {', '.join(unknown)}")
        return [self.usernames[n] for n in names]


RISK_CHOICES = [(r.value, r.label) for r in Risk]


class RuleForm(forms.Form):
    name = forms.CharField(max_length=200)
    tool_pattern = forms.CharField(required=False, max_length=200)
    risks = forms.MultipleChoiceField(
        choices=RISK_CHOICES, required=False, widget=forms.CheckboxSelectMultiple
    )
    session_metadata = forms.CharField(required=False, widget=forms.Textarea)
    user_ids = forms.TypedMultipleChoiceField(coerce=int, required=False)
    group_ids = forms.TypedMultipleChoiceField(coerce=int, required=False)
    remind_after_minutes = forms.IntegerField(required=False)
    escalate_at_percent = forms.IntegerField(required=False)
    escalate_user_ids = forms.TypedMultipleChoiceField(coerce=int, required=False)
    escalate_group_ids = forms.TypedMultipleChoiceField(coerce=int, required=False)
    notify_admins_on_expiry = forms.BooleanField(required=False)
    enabled = forms.BooleanField(required=False)
    is_default = forms.BooleanField(required=False)

    def __init__(self, *args, members: list, groups: list, **kwargs):
        super().__init__(*args, **kwargs)
        people = [(m.user_id, m.user.get_username()) for m in members]
        teams = [(g.pk, g.name) for g in groups]
        for name in ("user_ids", "escalate_user_ids"):
            self.fields[name].choices = people
        for name in ("group_ids", "escalate_group_ids"):
            self.fields[name].choices = teams

    def clean_session_metadata(self) -> dict[str, str]:
        return parse_metadata(self.cleaned_data["session_metadata"])


class PreviewForm(forms.Form):
    """Who would get this request? Nothing is written."""

    tool_name = forms.CharField(max_length=200)
    risk = forms.ChoiceField(choices=RISK_CHOICES)
    session_metadata = forms.CharField(required=False, widget=forms.Textarea)
    deadline_minutes = forms.IntegerField(required=False, min_value=1, max_value=10080)

    def clean_session_metadata(self) -> dict[str, str]:
        return parse_metadata(self.cleaned_data["session_metadata"])
