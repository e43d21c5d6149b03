"""Login pages beyond the password: give the TOTP code, or set up an authenticator first.

The password page is Django's LoginView (console_app.urls); when a second factor is needed,
and the lockout records, are tenancy_app.login.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods
from django_otp import devices_for_user, user_has_device
from django_otp import login as otp_login
from django_otp.plugins.otp_totp.models import TOTPDevice

from console_app.forms.auth import TokenForm
from stateroom.actor import Actor
from tenancy_app.login import HAS_DEVICE, audit_user


def _next(request) -> str:
    target = request.POST.get("next") or request.GET.get("next") or reverse("home")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        return reverse("home")
    return target


@login_required
@require_http_methods(["GET", "POST"])
def two_factor(request):
    """Give the code of your authenticator app."""
    devices = [d for d in devices_for_user(request.user, confirmed=True)]
    if not devices:
        return redirect(reverse("two-factor-setup") + "?" + urlencode({"next": _next(request)}))
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        for device in devices:
            if device.verify_token(form.cleaned_data["token"]):
                otp_login(request, device)
                return redirect(_next(request))
        form.add_error("token", "That code is not right (or has been used).")
    status = 422 if request.method == "POST" else 200
    return render(
        request,
        "console/auth/two_factor.html",
        {"form": form, "next": _next(request)},
        status=status,
    )


@login_required
@require_http_methods(["GET", "POST"])
def two_factor_setup(request):
    """Add an authenticator app: scan or type the key, then give one code to confirm."""
    if user_has_device(request.user, confirmed=True):
        return redirect(reverse("two-factor") + "?" + urlencode({"next": _next(request)}))
    device = TOTPDevice.objects.filter(user=request.user, confirmed=False).first()
    if device is None:
        device = TOTPDevice.objects.create(user=request.user, name="authenticator", confirmed=False)
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        if device.verify_token(form.cleaned_data["token"]):
            device.confirmed = True
            device.save(update_fields=["confirmed"])
            otp_login(request, device)
            request.session[HAS_DEVICE] = True
            audit_user(request.user, "user.second_factor_added", Actor.from_request(request))
            return redirect(_next(request))
        form.add_error("token", "That code is not right; check the key and the clock.")
    status = 422 if request.method == "POST" else 200
    key = _base32(device.bin_key)
    return render(
        request,
        "console/auth/two_factor_setup.html",
        {"form": form, "next": _next(request), "key": key, "uri": device.config_url},
        status=status,
    )


def _base32(raw: bytes) -> str:
    import base64

    return base64.b32encode(raw).decode().rstrip("=")
