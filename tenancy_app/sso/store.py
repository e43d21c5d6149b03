"""The tenant's single sign-on: its provider's configuration, its people, their roles.

The only writer of SsoConfig and SsoIdentity. Roles go through TenancyStore
(`member.role_set`, `member.removed`) and member groups through GroupStore, so
every change is audited where it always is; this store adds `sso.login`,
`sso.login_refused`, `sso.role_lost` and `sso.config_changed`.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from stateroom import egress
from stateroom.errors import Conflict, Unprocessable
from stateroom.store import BaseStore

from ..groups import GroupStore
from ..models import (
    ROLE_RANK,
    GroupMember,
    MemberGroup,
    Membership,
    Role,
    SsoConfig,
    SsoIdentity,
    Tenant,
)
from ..store import TenancyStore
from . import crypto
from .mapping import groups_of, member_groups_for, role_for

CONFIG_FIELDS = (
    "enabled",
    "display_name",
    "issuer",
    "client_id",
    "scopes",
    "groups_claim",
    "role_map",
    "group_map",
    "mfa_acr_values",
)
_URL = URLValidator(schemes=["http", "https"])


class SsoStore(BaseStore):
    def config(self) -> SsoConfig | None:
        return SsoConfig.objects.filter(tenant=self.tenant).first()

    @staticmethod
    def client_secret(config: SsoConfig) -> str:
        return crypto.decrypt(config.client_secret)

    def save_config(self, *, client_secret: str = "", require_sso: bool, **fields) -> SsoConfig:
        """Create or change the provider (audited; the secret kept when left empty)."""
        config = self.config()
        problems = self._problems(config, client_secret, fields)
        if problems:
            raise Unprocessable("The single sign-on settings are not valid.", details=problems)
        with self.atomic():
            before = {f: getattr(config, f) for f in CONFIG_FIELDS} if config else None
            if config is None:
                config = SsoConfig(tenant=self.tenant)
            for name, value in fields.items():
                setattr(config, name, value)
            if client_secret:
                config.client_secret = crypto.encrypt(client_secret)
            config.updated_at = self.now()
            config.save()
            after = {f: getattr(config, f) for f in CONFIG_FIELDS}
            tenant = Tenant.objects.select_for_update().get(pk=self.tenant.pk)
            after["require_sso"], before_sso = require_sso, tenant.require_sso
            if before is not None:
                before["require_sso"] = before_sso
            tenant.require_sso = self.tenant.require_sso = require_sso
            tenant.save(update_fields=["require_sso"])
            after["client_credentials_replaced"] = bool(client_secret)
            self.audit(
                "sso.config_changed",
                target_type="tenant",
                target_id=self.tenant.slug,
                before=before,
                after=after,
            )
        return config

    def _problems(self, config, client_secret: str, fields: dict) -> dict:
        problems: dict[str, list[str]] = {}
        unknown = set(fields) - set(CONFIG_FIELDS)
        for name in unknown:
            problems[name] = ["unknown"]
        issuer = fields.get("issuer", config.issuer if config else "")
        try:
            _URL(issuer)
            egress.check_url(issuer)
        except ValidationError:
            problems["issuer"] = ["an http(s) URL"]
        except egress.UnsafeDestination as exc:
            problems["issuer"] = [str(exc)]
        if not fields.get("client_id", config.client_id if config else ""):
            problems["client_id"] = ["required"]
        if config is None and not client_secret:
            problems["client_secret"] = ["required"]
        role_map = fields.get("role_map", {})
        if not isinstance(role_map, dict) or any(r not in Role.values for r in role_map.values()):
            problems["role_map"] = [f"each group maps to one of {', '.join(Role.values)}"]
        group_map = fields.get("group_map", {})
        slugs = set(MemberGroup.objects.filter(tenant=self.tenant).values_list("slug", flat=True))
        if not isinstance(group_map, dict) or any(s not in slugs for s in group_map.values()):
            problems["group_map"] = ["each group maps to one of the tenant's member groups"]
        return problems

    # --- people -----------------------------------------------------------
    def user_of(self, issuer: str, subject: str):
        found = SsoIdentity.objects.filter(tenant=self.tenant, issuer=issuer, subject=subject)
        identity = found.select_related("user").first()
        return identity.user if identity else None

    def create_user(self, issuer: str, subject: str, claims: dict):
        """A new user for this provider's subject (no password: it signs in through SSO)."""
        users = get_user_model().objects
        base = f"{self.tenant.slug}.{claims.get('preferred_username') or subject}"[:140]
        username, n = base, 1
        while users.filter(username=username).exists():
            n += 1
            username = f"{base}.{n}"
        with self.atomic():
            user = users.create_user(username, email=claims.get("email") or "")
            SsoIdentity.objects.create(
                tenant=self.tenant,
                issuer=issuer,
                subject=subject,
                user=user,
                created_at=self.now(),
            )
        return user

    def apply_claims(self, user, claims: dict, config: SsoConfig) -> str | None:
        """The role (and member groups) the claims grant now; None: no membership.

        A role that is lower than before, or gone, is audited `sso.role_lost`.
        """
        groups = groups_of(claims, config.groups_claim)
        role = role_for(groups, config.role_map)
        current = Membership.objects.filter(tenant=self.tenant, user=user).first()
        tenancy = TenancyStore(self.tenant, self.actor, clock=self.now)
        with self.atomic():
            if role is None:
                if current is not None:
                    self._lose(tenancy, user, current.role, None, groups)
                return None
            if current is None or current.role != role:
                if current is not None and ROLE_RANK[Role(role)] < ROLE_RANK[Role(current.role)]:
                    if not self._lose(tenancy, user, current.role, role, groups):
                        return None
                else:
                    tenancy.set_member(username=user.get_username(), role=role)
            self._member_groups(user, member_groups_for(groups, config.group_map), config)
        return role

    def _lose(self, tenancy: TenancyStore, user, before: str, after: str | None, groups) -> bool:
        """Lower or remove the role; False when it is the tenant's last admin's."""
        lost = True
        try:
            if after is None:
                tenancy.remove_member(user_id=user.pk)
            else:
                tenancy.set_member(username=user.get_username(), role=after)
        except Conflict:
            # The tenant's last admin: the membership stays (someone must manage the
            # tenant) but this sign-in is refused all the same (the caller sees None).
            after, lost = None, False
        self.audit(
            "sso.role_lost",
            target_type="user",
            target_id=str(user.pk),
            before={"role": before},
            after={"role": after, "groups": groups, "kept_as_last_admin": not lost},
        )
        return lost

    def _member_groups(self, user, wanted: set[str], config: SsoConfig) -> None:
        """Add or remove the member in the member groups the mapping names (only those)."""
        mapped = set(config.group_map.values())
        if not mapped:
            return
        groups = GroupStore(self.tenant, self.actor, clock=self.now)
        for group in MemberGroup.objects.filter(tenant=self.tenant, slug__in=mapped):
            members = list(
                GroupMember.objects.filter(tenant=self.tenant, group=group)
                .order_by("position")
                .values_list("user_id", flat=True)
            )
            inside = user.pk in members
            if inside == (group.slug in wanted):
                continue
            members = [*members, user.pk] if not inside else [m for m in members if m != user.pk]
            groups.save_group(
                name=group.name,
                slug=group.slug,
                user_ids=members,
                rotation_days=group.rotation_days,
                rotation_start=group.rotation_start,
            )

    def record(self, action: str, target_id: str, **after) -> None:
        """`sso.login`, `sso.login_refused`: one event in the tenant's log."""
        with self.atomic():
            self.audit(action, target_type="user", target_id=target_id, after=after)
