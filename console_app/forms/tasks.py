"""Forms of the task pages."""

from __future__ import annotations

from django import forms

from tasks_app.models import TaskStatus


class TaskFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *TaskStatus.choices], required=False)
