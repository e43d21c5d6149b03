"""Console page for runs: the list (read-only, support and up).

The run inspector shows the run's approvals and effects too: console_app.views.runs.
"""

from __future__ import annotations

from django import forms
from django.views.decorators.http import require_GET

from stateroom.actor import Actor
from stateroom.htmx import render_page
from stateroom.ids import MAX_PUBLIC_ID_LENGTH
from stateroom.pages import keyset_page
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

from .models import RunStatus
from .store import RunStateStore


class RunFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "Any status"), *RunStatus.choices], required=False)
    session_id = forms.CharField(
        required=False, max_length=MAX_PUBLIC_ID_LENGTH, label="Session id"
    )
    # Running runs no worker holds for longer than the tenant's setting (Run.unclaimed_since).
    unclaimed = forms.BooleanField(required=False, label="Waiting for a worker")

    def store_filters(self) -> dict:
        return {
            "status": self.cleaned_data["status"] or None,
            "session_id": self.cleaned_data["session_id"].strip() or None,
            "unclaimed": self.cleaned_data["unclaimed"],
        }


@require_permission(Permission.READ)
@require_GET
def run_list(request):
    form = RunFilterForm(request.GET)
    page = None
    if form.is_valid():
        runs = RunStateStore(request.tenant, Actor.from_request(request)).list_runs(
            **form.store_filters()
        )
        page = keyset_page(runs, request.GET)
    query = request.GET.copy()
    query.pop("cursor", None)
    return render_page(
        request,
        "runs/list.html",
        {"nav": "runs", "form": form, "page": page, "query": query.urlencode()},
        fragment="results",
    )
