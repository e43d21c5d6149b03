"""Forms of the login pages."""

from django import forms

from tenancy_app.login import CODE_DIGITS


class TokenForm(forms.Form):
    token = forms.RegexField(
        rf"^\d{{{CODE_DIGITS}}}$", error_messages={"invalid": f"{CODE_DIGITS} digits."}
    )
