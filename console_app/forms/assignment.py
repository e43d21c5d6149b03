"""The reassign form of the approval page."""

from __future__ import annotations

from django import forms


class ReassignForm(forms.Form):
    user_ids = forms.TypedMultipleChoiceField(coerce=int, required=False)
    group_ids = forms.TypedMultipleChoiceField(coerce=int, required=False)
    reason = forms.CharField(required=False)  # the store clips it (decision_reason)

    def __init__(self, *args, members: list, groups: list, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["user_ids"].choices = [(m.user_id, m.user.get_username()) for m in members]
        self.fields["group_ids"].choices = [(g.pk, g.name) for g in groups]
