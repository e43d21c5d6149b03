"""Demo tenants, people and tokens. Domain data is added by demo_app.scenarios."""

from django.contrib.auth import get_user_model
from django.db import transaction

from stateroom.actor import Actor
from tenancy_app.models import Membership, Role, Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore

DEMO_PASSWORD = "stateroom-demo"
DEMO_TENANTS = [("acme", "Acme Robotics"), ("globex", "Globex Payments")]
DEMO_ROLES = [Role.ADMIN, Role.OPERATOR, Role.SUPPORT]
DEMO_ACTOR = Actor.system("demo")


def demo_username(tenant_slug: str, role: str) -> str:
    return f"{role}@{tenant_slug}"


def ensure_tenant(slug: str, name: str, *, four_eyes_critical: bool = False) -> Tenant:
    """The demo tenant `slug`, created and configured through the tenancy store (audited)."""
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        return TenancyStore.create_tenant(
            slug=slug, name=name, actor=DEMO_ACTOR, four_eyes_critical=four_eyes_critical
        ).tenant
    if four_eyes_critical and not tenant.four_eyes_critical:
        with in_tenant(tenant):
            TenancyStore(tenant, DEMO_ACTOR).set_four_eyes(on=True)
    return tenant


def ensure_people() -> list[tuple[str, str, str]]:
    """Create demo tenants and one user per role; return (username, password, tenant)."""
    logins = []
    User = get_user_model()
    for slug, name in DEMO_TENANTS:
        with transaction.atomic():
            tenant = ensure_tenant(slug, name, four_eyes_critical=slug == "globex")
            for role in DEMO_ROLES:
                username = demo_username(slug, role)
                user, created = User.objects.get_or_create(username=username)
                if created:
                    user.set_password(DEMO_PASSWORD)
                if created or not user.email:  # notices by email reach them (console backend)
                    user.email = f"{role}@{slug}.example"
                    user.save()
                with in_tenant(tenant):  # memberships have row-level security
                    if not Membership.objects.filter(user=user, tenant=tenant).exists():
                        TenancyStore(tenant, DEMO_ACTOR).set_member(username=username, role=role)
                logins.append((username, DEMO_PASSWORD, slug))
    return logins
