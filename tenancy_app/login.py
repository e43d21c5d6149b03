"""The console's login beyond the password: TOTP second factor, and lockout records.

- A user who has a confirmed TOTP device must give a code after the password
  before any tenant page; so must every operator and admin of a tenant that
  requires it (`Tenant.require_2fa`), and one without a device is sent to set
  one up first. `needs_second_factor` is what TenantMiddleware asks. A session
  signed in through the tenant's provider whose ID token says it did MFA
  (`amr`/`acr`, tenancy_app.sso) is not asked again.
- A lockout (django-axes, too many wrong passwords for a username or from an
  address) is recorded in the audit log of every tenant the user belongs to,
  and so is a new second factor.

The pages that ask for the code and set up a device are console_app.views.auth.
"""

from __future__ import annotations

from urllib.parse import urlencode

from axes.signals import user_locked_out
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.urls import reverse
from django_otp import user_has_device
from django_otp.plugins.otp_totp.models import TOTPDevice

from stateroom import ports
from stateroom.actor import Actor

from .access import memberships_of
from .models import Membership, Role
from .scoping import in_tenant
from .sso.session import mfa_done as sso_mfa_done

SECOND_FACTOR_ROLES = (Role.OPERATOR, Role.ADMIN)


# Set at login when the user has a confirmed device: the check on every page then
# costs no query.
HAS_DEVICE = "_stateroom_has_otp_device"


def needs_second_factor(request, membership: Membership) -> str | None:
    """Where to send a user who has not given a second factor yet, or None."""
    user = request.user
    if user.is_verified() or sso_mfa_done(request, membership.tenant_id):
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


def audit_user(user, action: str, actor: Actor, **after) -> None:
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
    audit_user(
        user,
        "user.locked_out",
        Actor.system("login"),
        ip=ip_address,
    )
