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


def demo_username(tenant_slug: str, role: str) -> str:
    return f"{role}@{tenant_slug}"


def ensure_people() -> list[tuple[str, str, str]]:
    """Create demo tenants and one user per role; return (username, password, tenant)."""
    logins = []
    User = get_user_model()
    for slug, name in DEMO_TENANTS:
        with transaction.atomic():
            tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name})
            if slug == "globex":
                Tenant.objects.filter(pk=tenant.pk).update(four_eyes_critical=True)
            for role in DEMO_ROLES:
                username = demo_username(slug, role)
                user, created = User.objects.get_or_create(username=username)
                if created:
                    user.set_password(DEMO_PASSWORD)
                    user.save()
                with in_tenant(tenant):  # memberships have row-level security
                    if not Membership.objects.filter(user=user, tenant=tenant).exists():
                        TenancyStore(tenant, Actor.system("demo")).set_member(
                            username=username, role=role
                        )
                logins.append((username, DEMO_PASSWORD, slug))
    return logins
