from django.core.management.base import BaseCommand, CommandError

from audit_app.services import verify_chain
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant


class Command(BaseCommand):
    help = "Walk each tenant's audit hash chain; exit 1 at the first broken link."

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="Only this tenant (slug)")

    def handle(self, tenant=None, **options):
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"No tenant {tenant!r}.")
        for tenant_obj in tenants:
            with in_tenant(tenant_obj):
                bad = verify_chain(tenant_obj)
            if bad is not None:
                self.stderr.write(
                    f"BROKEN: tenant {tenant_obj.slug}: event #{bad.seq} "
                    f"({bad.action} {bad.target_type}:{bad.target_id}, id {bad.pk})"
                )
                raise SystemExit(1)
            self.stdout.write(f"ok: tenant {tenant_obj.slug}")
