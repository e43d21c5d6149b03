"""Forms of the channel pages and of a member's own notification preferences."""

from __future__ import annotations

from django import forms

from notifications_app.models import ChannelKind

CHANNEL_KINDS = [ChannelKind.EMAIL, ChannelKind.SLACK, ChannelKind.WEBHOOK]
RISKS = ("low", "medium", "high", "critical")
KIND_CHOICES = [(k.value, k.label) for k in ChannelKind]


class ChannelForm(forms.Form):
    """A secret left empty keeps the saved one (secrets are never shown again)."""

    name = forms.CharField(max_length=100)
    enabled = forms.BooleanField(required=False)
    channel = forms.CharField(required=False, max_length=100)  # Slack: default channel
    url = forms.URLField(required=False, max_length=2000, assume_scheme="https")  # webhook
    secret = forms.CharField(required=False, max_length=500)
    signing_secret = forms.CharField(required=False, max_length=500)

    def store_arguments(self, kind: str) -> dict:
        data = self.cleaned_data
        config = {}
        if kind == ChannelKind.SLACK and data["channel"]:
            config["channel"] = data["channel"]
        if kind == ChannelKind.WEBHOOK:
            config["url"] = data["url"]
        return {
            "name": data["name"],
            "enabled": data["enabled"],
            "config": config,
            "secret": data["secret"] or None,
            "signing_secret": (data["signing_secret"] or None)
            if kind == ChannelKind.SLACK
            else None,
        }


class LinkForm(forms.Form):
    external_user_id = forms.CharField(max_length=64)
    user_id = forms.TypedChoiceField(coerce=int)

    def __init__(self, *args, members: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user_id"].choices = [(m.user_id, m.user.get_username()) for m in members]


class TestSendForm(forms.Form):
    user_id = forms.TypedChoiceField(coerce=int)

    def __init__(self, *args, members: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user_id"].choices = [(m.user_id, m.user.get_username()) for m in members]


class PreferenceForm(forms.Form):
    """Channel kinds per risk (`risk_<risk>` checkboxes) and quiet hours."""

    quiet_start = forms.TimeField(required=False)
    quiet_end = forms.TimeField(required=False)
    time_zone = forms.CharField(max_length=64, initial="UTC")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for risk in RISKS:
            self.fields[f"risk_{risk}"] = forms.MultipleChoiceField(
                choices=KIND_CHOICES, required=False, widget=forms.CheckboxSelectMultiple
            )

    def by_risk(self) -> dict[str, list[str]]:
        return {risk: list(self.cleaned_data[f"risk_{risk}"]) for risk in RISKS}

    def rows(self):
        """(risk, bound field) for the template's table."""
        return [(risk, self[f"risk_{risk}"]) for risk in RISKS]
