"""Forms of the effect pages."""

from __future__ import annotations

from django import forms

from effects_app.models import EffectStatus


class SettleForm(forms.Form):
    outcome = forms.ChoiceField(
        choices=[
            (EffectStatus.COMMITTED, "Committed: it happened; a resume skips it"),
            (EffectStatus.FAILED, "Failed: it did not happen; a resume may run it again"),
        ],
        widget=forms.RadioSelect,
    )
    # Its limit is the store's (MAX_SETTLE_REASON_LENGTH): settle refuses, the form shows why.
    reason = forms.CharField(widget=forms.Textarea)
    back = forms.ChoiceField(choices=[("run", "run"), ("queue", "queue")], required=False)
