"""Forms of the session pages."""

from django import forms


class ReasonForm(forms.Form):
    # Its limit is the stores' (sessions_app.store.MAX_REASON_LENGTH): they refuse, it shows why.
    reason = forms.CharField(widget=forms.Textarea, strip=True)
