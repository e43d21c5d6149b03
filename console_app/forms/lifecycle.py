"""Forms of the lifecycle pages (erasing a user)."""

from __future__ import annotations

from django import forms

from lifecycle_app.erasure import MAX_USER_ID_LENGTH


# --- erasure of a user ----------------------------------------------------------------
class EraseForm(forms.Form):
    user_id = forms.CharField(max_length=MAX_USER_ID_LENGTH, strip=False, label="User id")
    confirm = forms.CharField(
        max_length=MAX_USER_ID_LENGTH, required=False, strip=False, label="Type the user id"
    )
    # The reason's limit is the store's (MAX_REASON_LENGTH): request refuses, the form shows it.
    reason = forms.CharField(required=False, widget=forms.Textarea, strip=True)
