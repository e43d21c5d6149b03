"""My notification preferences: every member sets their own (channels per risk, quiet hours)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from console_app.forms.channels import RISKS, PreferenceForm
from notifications_app.store import NotificationStore
from stateroom.actor import Actor
from stateroom.errors import StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


def _initial(preference) -> dict:
    if preference is None:
        return {"time_zone": "UTC"}
    initial = {
        "quiet_start": preference.quiet_start,
        "quiet_end": preference.quiet_end,
        "time_zone": preference.time_zone,
    }
    for risk in RISKS:
        initial[f"risk_{risk}"] = preference.by_risk.get(risk, [])
    return initial


@require_permission(Permission.READ)
@require_http_methods(["GET", "POST"])
def my_preferences(request):
    store = NotificationStore(request.tenant, Actor.from_request(request))
    preference = store.preference(request.user.pk)
    status = 200
    if request.method == "GET":
        form = PreferenceForm(initial=_initial(preference))
    else:
        form = PreferenceForm(request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                store.save_preference(
                    user_id=request.user.pk,
                    by_risk=form.by_risk(),
                    quiet_start=data["quiet_start"],
                    quiet_end=data["quiet_end"],
                    time_zone=data["time_zone"].strip(),
                )
            except StateroomError as exc:
                if not refused_fields(form, exc):
                    form.add_error(None, exc.message)
            else:
                messages.success(request, "Your notification preferences are saved.")
                url = reverse("preferences", kwargs={"tenant_slug": request.tenant.slug})
                return redirect_after_post(request, url)
        status = 422
    context = {"nav": "preferences", "form": form, "saved": preference is not None}
    return render(request, "console/preferences/preferences.html", context, status=status)
