"""Console forms show the stores' refusals: a limit or a rule is the store's, not the form's.

A console form leaves out what its store checks (a reason's length, an id's
form); the view calls the store and puts a 422 `validation_error` on the
fields it names, so the page shows the store's own words next to the field.
"""

from __future__ import annotations

from django import forms

from .errors import StateroomError, Unprocessable


def refused_fields(form: forms.Form, exc: StateroomError) -> bool:
    """Add the store's errors to the form fields it names; False if it named none of them."""
    if not isinstance(exc, Unprocessable) or exc.code != "validation_error":
        return False
    named = {key: errors for key, errors in (exc.details or {}).items() if key in form.fields}
    for field, errors in named.items():
        form.add_error(field, errors)
    return bool(named)
