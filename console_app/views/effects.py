"""Pages of the effect ledger: the queue of effects a person must settle, and settling."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import Http404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from console_app.forms.effects import SettleForm
from effects_app.store import EffectStore
from stateroom.actor import Actor
from stateroom.errors import NotFound, StateroomError
from stateroom.forms import refused_fields
from stateroom.htmx import redirect_after_post, render_page
from stateroom.pages import keyset_page
from tenancy_app.access import require_permission
from tenancy_app.permissions import Permission


@require_permission(Permission.READ)
@require_GET
def queue(request):
    """Every effect whose outcome a person must settle, across runs, newest first."""
    store = EffectStore(request.tenant, Actor.from_request(request))
    page = keyset_page(store.needing_a_person(), request.GET)
    return render_page(
        request,
        "console/effects/queue.html",
        {
            "nav": "effects",
            "page": page,
            "stuck_minutes": settings.STATEROOM_EFFECT_STUCK_MINUTES,
        },
        fragment="results",
    )


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
            store.settle(
                effect_id=effect_id,
                outcome=form.cleaned_data["outcome"],
                reason=form.cleaned_data["reason"],
            )
        except StateroomError as exc:
            if not refused_fields(form, exc):
                messages.error(request, exc.message)
        else:
            messages.success(
                request, f"Effect {effect.effect_id} settled as {form.cleaned_data['outcome']}."
            )
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data.get("back") == "queue":
            return redirect_after_post(
                request, reverse("effects:queue", kwargs={"tenant_slug": request.tenant.slug})
            )
        url = reverse(
            "runs:detail", kwargs={"tenant_slug": request.tenant.slug, "run_id": effect.run.run_id}
        )
        return redirect_after_post(request, f"{url}#effects")
    return render_page(
        request,
        "console/effects/settle.html",
        {"nav": "runs", "effect": effect, "form": form, "back": request.GET.get("back", "")},
        fragment="panel",
        status=422 if form.is_bound else 200,
    )
