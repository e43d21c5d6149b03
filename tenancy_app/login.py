"""The console's login beyond the password: TOTP second factor, and lockout records.

- A user who has a confirmed TOTP device must give a code after the password
  before any tenant page; so must every operator and admin of a tenant that
  requires it (`Tenant.require_2fa`), and one without a device is sent to set
  one up first. `needs_second_factor` is what TenantMiddleware asks.
- A lockout (django-axes, too many wrong passwords for a username or from an
  address) is recorded in the audit log of every tenant the user belongs to,
  and so is a new second factor.
"""

from __future__ import annotations

from urllib.parse import urlencode

from axes.signals import user_locked_out
from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods
from django_otp import devices_for_user, user_has_device
from django_otp import login as otp_login
from django_otp.plugins.otp_totp.models import TOTPDevice

from stateroom import ports
from stateroom.actor import Actor

from .access import memberships_of
from .models import Membership, Role
from .scoping import in_tenant

SECOND_FACTOR_ROLES = (Role.OPERATOR, Role.ADMIN)


# Set at login when the user has a confirmed device: the check on every page then
# costs no query.
HAS_DEVICE = "_stateroom_has_otp_device"


def needs_second_factor(request, membership: Membership) -> str | None:
    """Where to send a user who has not given a second factor yet, or None."""
    user = request.user
    if user.is_verified():
        return None
    has_device = bool(request.session.get(HAS_DEVICE))
    required = membership.tenant.require_2fa and membership.role in SECOND_FACTOR_ROLES
    if not (has_device or required):
        return None
    if not has_device:
        has_device = user_has_device(user, confirmed=True)
    target = "two-factor" if has_device else "two-factor-setup"
    return reverse(target) + "?" + urlencode({"next": request.get_full_path()})


@receiver(user_logged_in)
def note_second_factor(sender, request, user, **kwargs) -> None:
    has_session = request is not None and hasattr(request, "session")
    if has_session and user_has_device(user, confirmed=True):
        request.session[HAS_DEVICE] = True


# The digits of a code: what django-otp gives a new TOTP device (the pages' inputs say it too).
CODE_DIGITS = TOTPDevice._meta.get_field("digits").default


class TokenForm(forms.Form):
    token = forms.RegexField(
        rf"^\d{{{CODE_DIGITS}}}$", error_messages={"invalid": f"{CODE_DIGITS} digits."}
    )


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
        request, "tenancy/two_factor.html", {"form": form, "next": _next(request)}, status=status
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
            _audit_user(request.user, "user.second_factor_added", Actor.from_request(request))
            return redirect(_next(request))
        form.add_error("token", "That code is not right; check the key and the clock.")
    status = 422 if request.method == "POST" else 200
    key = _base32(device.bin_key)
    return render(
        request,
        "tenancy/two_factor_setup.html",
        {"form": form, "next": _next(request), "key": key, "uri": device.config_url},
        status=status,
    )


def _base32(raw: bytes) -> str:
    import base64

    return base64.b32encode(raw).decode().rstrip("=")


def _audit_user(user, action: str, actor: Actor, **after) -> None:
    """One event in each tenant the user belongs to."""
    for membership in memberships_of(user.pk):
        with in_tenant(membership.tenant):
            ports.audit().record_event(
                tenant=membership.tenant,
                actor=actor,
                action=action,
                target_type="user",
                target_id=str(user.pk),
                after={"username": user.get_username(), **after},
            )


@receiver(user_locked_out)
def record_lockout(sender, request, username, ip_address, **kwargs) -> None:
    user = get_user_model().objects.filter(username=username).first() if username else None
    if user is None:
        return
    _audit_user(
        user,
        "user.locked_out",
        Actor.system("login"),
        ip=ip_address,
    )
