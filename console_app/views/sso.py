"""The single sign-on settings page: the tenant's OpenID Connect provider (admins)."""

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from console_app.forms.sso import SsoForm
from stateroom.actor import Actor
from stateroom.errors import StateroomError
from stateroom.forms import refused_fields
from tenancy_app.access import require_permission
from tenancy_app.models import Role
from tenancy_app.permissions import Permission
from tenancy_app.sso.store import SsoStore


@require_permission(Permission.MANAGE)
@require_http_methods(["GET", "POST"])
def settings_sso(request):
    store = SsoStore(request.tenant, Actor.from_request(request))
    config = store.config()
    status = 200
    if request.method == "POST":
        form = SsoForm(request.POST)
        if form.is_valid():
            fields = dict(form.cleaned_data)
            secret, require_sso = fields.pop("client_secret"), fields.pop("require_sso")
            try:
                store.save_config(client_secret=secret, require_sso=require_sso, **fields)
            except StateroomError as exc:
                if not refused_fields(form, exc):
                    form.add_error(None, exc.message)
            else:
                messages.success(request, "Single sign-on settings saved.")
                return redirect(reverse("tenancy:sso", args=[request.tenant.slug]))
        status = 422
    else:
        form = SsoForm(initial=SsoForm.initial_from(config, request.tenant.require_sso))
    callback = request.build_absolute_uri(reverse("sso-callback"))
    login_url = request.build_absolute_uri(reverse("sso-page", args=[request.tenant.slug]))
    return render(
        request,
        "console/settings/sso.html",
        {
            "form": form,
            "config": config,
            "tab": "sso",
            "roles": Role.values,
            "callback": callback,
            "login_url": login_url,
        },
        status=status,
    )
