import hashlib
import secrets

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django_scopes import ScopedManager

from stateroom.fields import TenantForeignKey
from stateroom.leases import DEFAULT_SESSION_LEASE_SECONDS
from stateroom.postgres.tenant_keys import TenantKeyed


class Role(models.TextChoices):
    SUPPORT = "support", "Support"
    OPERATOR = "operator", "Operator"
    ADMIN = "admin", "Admin"


ROLE_RANK = {Role.SUPPORT: 1, Role.OPERATOR: 2, Role.ADMIN: 3}


class Tenant(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    legal_hold = models.BooleanField(default=False)
    # Four-eyes rule: approvals of critical risk need two different operators.
    four_eyes_critical = models.BooleanField(default=False)
    # Quick approval: the highest risk an operator may approve from the inbox without
    # opening the call ("none": every approval opens the full page first).
    quick_approve_max_risk = models.CharField(
        max_length=16,
        choices=[("none", "none"), ("low", "low"), ("medium", "medium")],
        default="low",
    )
    # Serial by default: one attached run per session (DESIGN.md section 3).
    allow_concurrent_runs = models.BooleanField(default=False)
    # Operators and admins reach this tenant's console only after a TOTP second factor.
    require_2fa = models.BooleanField(default=False)
    # The lease of a new session unless it asks for another (seed 004): every
    # activity renews it for this long. 30 days, at most 30 days.
    session_lease_seconds = models.PositiveIntegerField(
        default=DEFAULT_SESSION_LEASE_SECONDS, db_default=DEFAULT_SESSION_LEASE_SECONDS
    )
    # A running run that no worker has held for this long is flagged "waiting for a
    # worker" (console and API `unclaimed_since`): resumed or decided, nobody claimed it.
    unclaimed_run_warning_seconds = models.PositiveIntegerField(default=120, db_default=120)
    # With single sign-on configured (SsoConfig): members reach the console only through
    # it, but for admins who log in with a local password (break-glass).
    require_sso = models.BooleanField(default=False, db_default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.slug


class TenantOwned(TenantKeyed, models.Model):
    """Base for every tenant-owned row.

    The default manager refuses to query outside an active tenant scope
    (django-scopes); on PostgreSQL the table also gets a forced RLS policy in
    the migration that creates it (tenancy_app.rls.EnableRowLevelSecurity).
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")

    objects = ScopedManager(tenant="tenant")

    class Meta:
        abstract = True


def hot_row_tenant() -> models.ForeignKey:
    """The `tenant` of a row a hot statement writes with its parent: no constraint or index
    of its own in the database.

    The parent proves the tenant: either by the row's parent key `(tenant_id,
    parent_id) REFERENCES parent (tenant_id, id)` (stateroom/postgres/tenant_keys.py;
    the parent row carries the same `tenant_id` under its own tenant foreign key), or
    by the statement that writes the row holding the parent's row lock (a session's
    items and append keys). A second check per row, and a one-column index no query
    reads (every index of the row leads with the tenant), would cost each write for
    nothing (issue 40)."""
    return models.ForeignKey(
        Tenant, on_delete=models.PROTECT, related_name="+", db_constraint=False, db_index=False
    )


def rollup_tenant() -> models.ForeignKey:
    """The `tenant` of a rollup row (stateroom.rollup): a key to the tenant, and no index of
    its own (the row's primary key leads with it)."""
    return models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)


class RollupState(TenantOwned):
    """How far one tenant's rows are rolled up (stateroom.rollup.State): a row per tenant;
    and the UTC midnights its sums since an origin are kept at, `days_from` through
    `days_through` (None: none yet; stateroom.rollup.sum_days)."""

    tenant = models.OneToOneField(
        Tenant, primary_key=True, on_delete=models.PROTECT, related_name="+"
    )
    closed_through = models.DateTimeField(null=True)
    open_quarters = ArrayField(models.DateTimeField(), default=list)
    days_from = models.DateTimeField(null=True)
    days_through = models.DateTimeField(null=True)

    class Meta:
        abstract = True


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "tenant"], name="membership_user_tenant_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}@{self.tenant_id}:{self.role}"

    def has_role(self, role: str) -> bool:
        return ROLE_RANK[Role(self.role)] >= ROLE_RANK[Role(role)]

    def can(self, permission: str) -> bool:
        """Whether this member's role has `permission` (tenancy_app.permissions.ROLE_MATRIX)."""
        from .permissions import role_has  # the matrix builds on this module's roles

        return role_has(self.role, permission)


class TokenRole(models.TextChoices):
    RUNTIME = "runtime", "Runtime"
    OPERATOR = "operator", "Operator (may decide approvals)"
    ADMIN = "admin", "Admin (operator, and the data lifecycle: deletions, erasures)"


# What each token role may do on top of the runtime calls every token makes.
TOKEN_ROLE_RANK = {TokenRole.RUNTIME: 1, TokenRole.OPERATOR: 2, TokenRole.ADMIN: 3}


TOKEN_PREFIX = "sr_"


def hash_secret(raw: str) -> str:
    # Tokens carry 256 bits of randomness, so a fast hash is enough (no KDF needed).
    return hashlib.sha256(raw.encode()).hexdigest()


class RuntimeToken(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="tokens")
    name = models.CharField(max_length=100)
    role = models.CharField(max_length=16, choices=TokenRole.choices, default=TokenRole.RUNTIME)
    prefix = models.CharField(max_length=16, help_text="First characters, shown to identify it")
    secret_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    webhook_url = models.URLField(blank=True, default="")
    webhook_secret = models.CharField(max_length=64, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @staticmethod
    def generate_secret() -> str:
        return TOKEN_PREFIX + secrets.token_urlsafe(32)


class RetentionPolicy(TenantKeyed, models.Model):
    """How long content of ended sessions is kept, per data class (days; null = forever)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="retention")
    session_items_days = models.PositiveIntegerField(null=True, blank=True)
    run_events_days = models.PositiveIntegerField(null=True, blank=True)
    checkpoints_days = models.PositiveIntegerField(null=True, blank=True)
    effect_payloads_days = models.PositiveIntegerField(null=True, blank=True)
    extra_days_failed_or_approved = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"retention for tenant {self.tenant_id}"


class MemberGroup(TenantOwned):
    """A named group of the tenant's members: who an approval routing rule asks.

    With `rotation_days`, the group is an on-call list: its members take turns,
    in `position` order, for `rotation_days` each from `rotation_start`, and a
    notice to the group reaches only the member on call (`on_call`).
    """

    slug = models.SlugField(max_length=64)
    name = models.CharField(max_length=200)
    rotation_days = models.PositiveSmallIntegerField(null=True, blank=True)
    rotation_start = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "slug"], name="member_group_slug_uniq")
        ]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_on_call_list(self) -> bool:
        return self.rotation_days is not None

    def on_call(self, members: list, now) -> list:
        """Who of `members` (in position order) a notice to this group reaches at `now`."""
        if not self.is_on_call_list or not members:
            return list(members)
        start = self.rotation_start or self.created_at
        turns = max(0, int((now - start).total_seconds() // (self.rotation_days * 86400)))
        return [members[turns % len(members)]]


class GroupMember(TenantOwned):
    group = TenantForeignKey(
        MemberGroup, on_delete=models.CASCADE, related_name="memberships", db_constraint=False
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "group", "user"], name="group_member_tenant_uniq"
            )
        ]
        indexes = [models.Index(fields=["tenant", "user"], name="group_member_user_idx")]

    def __str__(self) -> str:
        return f"{self.user_id} in {self.group_id}"


class SsoConfig(TenantOwned):
    """The tenant's OpenID Connect provider (tenancy_app.sso): one per tenant.

    `role_map` maps a group (a value of the `groups_claim` claim) to a role, the
    highest mapped role wins; `group_map` maps a group to a member group's slug.
    `client_secret` is Fernet-encrypted (tenancy_app.sso.crypto). `mfa_acr_values`:
    `acr` values that mean the provider did multi-factor authentication.
    """

    enabled = models.BooleanField(default=True)
    display_name = models.CharField(max_length=100, default="your company's identity provider")
    issuer = models.URLField(max_length=500)
    client_id = models.CharField(max_length=255)
    client_secret = models.TextField()
    scopes = models.CharField(max_length=200, default="openid email profile")
    groups_claim = models.CharField(max_length=100, default="groups")
    role_map = models.JSONField(default=dict)
    group_map = models.JSONField(default=dict)
    mfa_acr_values = models.JSONField(default=list)
    updated_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="sso_config_tenant_uniq")]

    def __str__(self) -> str:
        return f"sso of tenant {self.tenant_id}"


class SsoIdentity(TenantOwned):
    """The user a provider's subject signs in as: created at its first login, never an
    existing local account (a provider names whoever it likes by email)."""

    issuer = models.URLField(max_length=500)
    subject = models.CharField(max_length=255)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "issuer", "subject"], name="sso_identity_subject_uniq"
            )
        ]

    def __str__(self) -> str:
        return f"{self.subject}@{self.issuer}"
