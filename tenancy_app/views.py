from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from audit_app.actor import Actor
from stateroom.errors import NotFound, StateroomError

from .access import require_role
from .models import Membership, Role, TokenRole
from .store import TenancyStore


@require_GET
def healthz(request):
    return JsonResponse({"status": "ok"})


@login_required
@require_GET
def home(request):
    """Send a user to their (first) tenant's console, or explain why there is none."""
    membership = (
        Membership.objects.filter(user=request.user)
        .select_related("tenant")
        .order_by("tenant__name")
        .first()
    )
    if membership is None:
        return render(request, "tenancy/no_tenant.html", status=403)
    return redirect("tenant-home", tenant_slug=membership.tenant.slug)


@require_GET
def tenant_home(request):
    return render(request, "tenancy/home.html")


@require_role(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def settings_tokens(request):
    store = TenancyStore(request.tenant, Actor.from_request(request))
    created_secret = None
    if request.method == "POST":
        try:
            _, created_secret = store.create_token(
                name=request.POST.get("name", ""),
                role=request.POST.get("role", TokenRole.RUNTIME),
                created_by=request.user,
                webhook_url=request.POST.get("webhook_url", "").strip(),
            )
        except StateroomError as exc:
            messages.error(request, exc.message)
            return redirect("tenancy:tokens", tenant_slug=request.tenant.slug)
    return render(
        request,
        "tenancy/tokens.html",
        {
            "tokens": store.tokens().select_related("created_by"),
            "created_secret": created_secret,
            "roles": TokenRole.choices,
        },
    )


@require_role(Role.ADMIN)
@require_POST
def revoke_token(request, token_id: int):
    store = TenancyStore(request.tenant, Actor.from_request(request))
    try:
        token = store.revoke_token(token_id=token_id, reason=request.POST.get("reason", ""))
    except NotFound as exc:
        raise Http404 from exc
    except StateroomError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Token {token.name} revoked.")
    return redirect("tenancy:tokens", tenant_slug=request.tenant.slug)
