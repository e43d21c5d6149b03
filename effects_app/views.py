"""Console action on the effect ledger: settle an effect whose outcome is not known."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from audit_app.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.htmx import redirect_after_post, render_page
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission

from .models import EffectStatus
from .store import EffectStore


class SettleForm(forms.Form):
    outcome = forms.ChoiceField(
        choices=[
            (EffectStatus.COMMITTED, "Committed: it happened; a resume skips it"),
            (EffectStatus.FAILED, "Failed: it did not happen; a resume may run it again"),
        ],
        widget=forms.RadioSelect,
    )
    reason = forms.CharField(max_length=2000, widget=forms.Textarea)


@require_permission(Permission.SETTLE_EFFECTS)
@require_http_methods(["GET", "POST"])
def settle(request, effect_id: str):
    """GET: the effect and a form (outcome + reason). POST: `EffectStore.settle`, audited there."""
    store = EffectStore(request.tenant, Actor.from_request(request))
    try:
        effect = store.get(effect_id)
    except NotFound as exc:
        raise Http404("No such effect") from exc
    form = SettleForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            store.settle(effect_id=effect_id, **form.cleaned_data)
        except StateroomError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, f"Effect {effect.effect_id} settled as {form.cleaned_data['outcome']}."
            )
        url = reverse(
            "runs:detail", kwargs={"tenant_slug": request.tenant.slug, "run_id": effect.run.run_id}
        )
        return redirect_after_post(request, f"{url}#effects")
    return render_page(
        request,
        "effects/settle.html",
        {"nav": "runs", "effect": effect, "form": form},
        fragment="panel",
        status=422 if form.is_bound else 200,
    )
