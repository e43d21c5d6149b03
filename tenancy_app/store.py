"""State changes of the tenancy domain: tokens, members, tenant settings."""

from __future__ import annotations

import base64
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction
from django.utils import timezone

from stateroom import egress
from stateroom.actor import Actor
from stateroom.errors import Conflict, NotFound, Unprocessable
from stateroom.leases import MAX_CLAIM_LEASE_SECONDS, MAX_SESSION_LEASE_SECONDS
from stateroom.reasons import MAX_REASON_LENGTH
from stateroom.store import BaseStore

from .models import Membership, RetentionPolicy, Role, RuntimeToken, Tenant, TokenRole, hash_secret

# The longest wait before a running run nobody holds is flagged: the longest claim lease.
MAX_UNCLAIMED_WARNING = MAX_CLAIM_LEASE_SECONDS
# The limits of the console's tenancy forms (their maxlength comes from here too).
MAX_TOKEN_NAME_LENGTH = RuntimeToken._meta.get_field("name").max_length
MAX_WEBHOOK_URL_LENGTH = RuntimeToken._meta.get_field("webhook_url").max_length
MAX_HOLD_REASON_LENGTH = MAX_REASON_LENGTH  # why the tenant is held: a person's reason

# Decisions are POSTed to it by the worker: nothing but http(s).
_WEBHOOK_URL = URLValidator(schemes=["http", "https"])


def new_webhook_secret() -> str:
    """A Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class TenancyStore(BaseStore):
    @classmethod
    def create_tenant(
        cls, *, slug: str, name: str = "", actor: Actor, four_eyes_critical: bool = False
    ) -> TenancyStore:
        """A new tenant (audited `tenant.created`), and its store for `actor`.

        Its settings go through the store's setters afterwards, audited each
        (`four_eyes_critical=True`: `set_four_eyes(on=True)`). A taken slug is a
        Conflict (`tenant_exists`).
        """
        from .scoping import in_tenant

        with transaction.atomic():
            if Tenant.objects.filter(slug=slug).exists():
                raise Conflict(f"Tenant {slug!r} already exists.", code="tenant_exists")
            tenant = Tenant.objects.create(slug=slug, name=name or slug)
            store = cls(tenant, actor)
            with in_tenant(tenant):  # the audit chain has row-level security
                store._audit("tenant.created", "tenant", slug, after={"name": tenant.name})
                if four_eyes_critical:
                    store.set_four_eyes(on=True)
        return store

    def _audit(self, action: str, target_type: str, target_id, **kw) -> None:
        self.audit(action, target_type=target_type, target_id=str(target_id), **kw)

    # --- tokens -----------------------------------------------------------
    def tokens(self):
        return RuntimeToken.objects.filter(tenant=self.tenant).order_by("-created_at")

    def create_token(
        self, *, name: str, role: str = TokenRole.RUNTIME, created_by=None, webhook_url: str = ""
    ) -> tuple[RuntimeToken, str]:
        """Create a token; the raw secret is returned once and never stored.

        With a `webhook_url`, the token also gets a webhook signing secret
        (`token.webhook_secret`) for the receiver to check signatures.
        """
        if role not in TokenRole.values:
            raise Unprocessable(
                "Unknown token role.", details={"role": [f"not one of {TokenRole.values}"]}
            )
        if not name.strip():
            raise Unprocessable("A token needs a name.", details={"name": ["required"]})
        if len(name.strip()) > MAX_TOKEN_NAME_LENGTH:
            raise Unprocessable(
                f"A token name has at most {MAX_TOKEN_NAME_LENGTH} characters.",
                details={"name": [f"at most {MAX_TOKEN_NAME_LENGTH} characters"]},
            )
        if webhook_url:
            try:
                _WEBHOOK_URL(webhook_url)
                if len(webhook_url) > MAX_WEBHOOK_URL_LENGTH:
                    raise ValidationError("too long")
            except ValidationError as exc:
                most = f"of at most {MAX_WEBHOOK_URL_LENGTH} characters"
                raise Unprocessable(
                    f"The webhook URL must be an http or https URL {most}.",
                    details={"webhook_url": [f"must be an http(s) URL {most}"]},
                ) from exc
            try:
                egress.check_url(webhook_url)
            except egress.UnsafeDestination as exc:
                raise Unprocessable(
                    f"The webhook URL cannot be used: {exc}",
                    code="unsafe_webhook_url",
                    details={"webhook_url": [str(exc)]},
                ) from exc
        raw = RuntimeToken.generate_secret()
        with transaction.atomic():
            token = RuntimeToken.objects.create(
                tenant=self.tenant,
                name=name.strip(),
                role=role,
                prefix=raw[:10],
                secret_hash=hash_secret(raw),
                created_by=created_by,
                webhook_url=webhook_url,
                webhook_secret=new_webhook_secret() if webhook_url else "",
            )
            self._audit(
                "token.created",
                "token",
                token.pk,
                after={"name": token.name, "role": role, "webhook_url": webhook_url},
            )
        return token, raw

    def revoke_token(self, *, token_id: int, reason: str = "") -> RuntimeToken:
        with transaction.atomic():
            token = (
                RuntimeToken.objects.select_for_update()
                .filter(tenant=self.tenant, pk=token_id)
                .first()
            )
            if token is None:
                raise NotFound("No such token.")
            if token.revoked_at is not None:
                raise Conflict("Token already revoked.", code="already_revoked")
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            self._audit(
                "token.revoked", "token", token.pk, after={"name": token.name}, reason=reason
            )
        return token

    # --- members ----------------------------------------------------------
    def members(self):
        return (
            Membership.objects.filter(tenant=self.tenant)
            .select_related("user")
            .order_by("user__username")
        )

    def set_member(self, *, username: str, role: str) -> Membership:
        if role not in Role.values:
            raise Unprocessable("Unknown role.", details={"role": [f"not one of {Role.values}"]})
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise NotFound("No such user.")
        with transaction.atomic():
            membership = (
                Membership.objects.select_for_update().filter(tenant=self.tenant, user=user).first()
            )
            before = {"role": membership.role} if membership else None
            if membership is not None and role != Role.ADMIN:
                self._keep_an_admin(membership)
            if membership is None:
                membership = Membership.objects.create(tenant=self.tenant, user=user, role=role)
            else:
                membership.role = role
                membership.save(update_fields=["role"])
            self._audit("member.role_set", "user", user.pk, before=before, after={"role": role})
        return membership

    def remove_member(self, *, user_id: int) -> None:
        with transaction.atomic():
            membership = (
                Membership.objects.select_for_update()
                .filter(tenant=self.tenant, user_id=user_id)
                .first()
            )
            if membership is None:
                raise NotFound("No such member.")
            self._keep_an_admin(membership)
            before = {"role": membership.role}
            membership.delete()
            self._audit("member.removed", "user", user_id, before=before)

    def _keep_an_admin(self, membership: Membership) -> None:
        """Refuse to remove or demote the tenant's last admin: nobody could manage it after."""
        if membership.role != Role.ADMIN:
            return
        # Locking every admin row serializes two admins demoting each other at once.
        admins = list(
            Membership.objects.select_for_update()
            .filter(tenant=self.tenant, role=Role.ADMIN)
            .values_list("user_id", flat=True)
        )
        if admins == [membership.user_id]:
            raise Conflict(
                "This is the tenant's last admin: make someone else admin first.",
                code="last_admin",
            )

    # --- tenant settings --------------------------------------------------
    def set_legal_hold(self, *, on: bool, reason: str) -> Tenant:
        if not isinstance(reason, str) or len(reason) > MAX_HOLD_REASON_LENGTH:
            raise Unprocessable(
                "The reason is too long.",
                details={"reason": [f"a string of at most {MAX_HOLD_REASON_LENGTH} characters"]},
            )
        with transaction.atomic():
            tenant = Tenant.objects.select_for_update().get(pk=self.tenant.pk)
            if tenant.legal_hold == on:
                raise Conflict(
                    "Legal hold is already " + ("on." if on else "off."), code="no_change"
                )
            tenant.legal_hold = on
            tenant.save(update_fields=["legal_hold"])
            self._audit(
                "tenant.legal_hold_on" if on else "tenant.legal_hold_off",
                "tenant",
                tenant.slug,
                before={"legal_hold": not on},
                after={"legal_hold": on},
                reason=reason,
            )
        self.tenant.legal_hold = on
        return tenant

    def set_four_eyes(self, *, on: bool) -> None:
        self._change_setting("four_eyes_critical", on)

    def set_require_2fa(self, *, on: bool) -> None:
        """Operators and admins of this tenant need a TOTP second factor (audited)."""
        self._change_setting("require_2fa", on)

    def unlock_member(self, *, user_id: int) -> int:
        """Lift a member's login lockout (django-axes); how many lockout records were cleared."""
        from axes.utils import reset

        membership = (
            Membership.objects.filter(tenant=self.tenant, user_id=user_id)
            .select_related("user")
            .first()
        )
        if membership is None:
            raise NotFound("No such member.")
        with transaction.atomic():
            cleared = reset(username=membership.user.get_username())
            self._audit("member.unlocked", "user", user_id, after={"cleared": cleared})
        return cleared

    QUICK_APPROVE_CHOICES = ("none", "low", "medium")

    def set_quick_approve(self, *, max_risk: str) -> None:
        """The highest risk approved from the inbox in one keystroke (audited)."""
        if max_risk not in self.QUICK_APPROVE_CHOICES:
            raise Unprocessable(
                "Unknown quick-approve level.",
                details={"max_risk": [f"one of {', '.join(self.QUICK_APPROVE_CHOICES)}"]},
            )
        self._change_setting("quick_approve_max_risk", max_risk)

    def set_session_lease(self, *, seconds: int) -> None:
        """The lease of new sessions (every activity renews it for this long); 1 s to 30 days."""
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int)
            or not 1 <= seconds <= MAX_SESSION_LEASE_SECONDS
        ):
            raise Unprocessable(
                "The session lease is from 1 second to 30 days.",
                details={
                    "session_lease_seconds": [f"an integer from 1 to {MAX_SESSION_LEASE_SECONDS}"]
                },
            )
        self._change_setting("session_lease_seconds", seconds)

    def set_unclaimed_run_warning(self, *, seconds: int) -> None:
        """How long a running run may go without a live claim before the console and the
        API flag it "waiting for a worker" (audited); 1 s to a day."""
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int)
            or not 1 <= seconds <= MAX_UNCLAIMED_WARNING
        ):
            raise Unprocessable(
                "The wait before a run nobody holds is flagged is from 1 second to a day.",
                details={
                    "unclaimed_run_warning_seconds": [
                        f"an integer from 1 to {MAX_UNCLAIMED_WARNING}"
                    ]
                },
            )
        self._change_setting("unclaimed_run_warning_seconds", seconds)

    def _change_setting(self, field: str, value: Any) -> None:
        """One tenant setting, under the tenant row's lock; audited when it changes."""
        with transaction.atomic():
            tenant = Tenant.objects.select_for_update().get(pk=self.tenant.pk)
            before = getattr(tenant, field)
            if before != value:
                setattr(tenant, field, value)
                tenant.save(update_fields=[field])
                self._audit(
                    "tenant.settings_changed",
                    "tenant",
                    tenant.slug,
                    before={field: before},
                    after={field: value},
                )
        setattr(self.tenant, field, value)

    def retention(self) -> RetentionPolicy:
        return RetentionPolicy.objects.filter(tenant=self.tenant).first() or RetentionPolicy(
            tenant=self.tenant
        )

    def set_retention(self, **days: int | None) -> RetentionPolicy:
        allowed = {
            "session_items_days",
            "run_events_days",
            "checkpoints_days",
            "effect_payloads_days",
            "extra_days_failed_or_approved",
        }
        unknown = set(days) - allowed
        if unknown:
            raise Unprocessable(
                "Unknown retention fields.", details={k: ["unknown"] for k in unknown}
            )
        with transaction.atomic():
            policy, _ = RetentionPolicy.objects.select_for_update().get_or_create(
                tenant=self.tenant
            )
            before = {k: getattr(policy, k) for k in allowed}
            for key, value in days.items():
                setattr(
                    policy, key, value if key != "extra_days_failed_or_approved" else value or 0
                )
            policy.save()
            self._audit(
                "tenant.retention_changed",
                "tenant",
                self.tenant.slug,
                before=before,
                after={k: getattr(policy, k) for k in allowed},
            )
        return policy
