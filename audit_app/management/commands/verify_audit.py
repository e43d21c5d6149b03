from django.core.management.base import BaseCommand, CommandError

from audit_app.anchor import anchor_path, check_anchor, latest_anchors
from audit_app.services import verify_chain
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant


class Command(BaseCommand):
    help = (
        "Walk each tenant's audit hash chain; exit 1 at the first broken link. With --anchor, "
        "also check that every head anchored outside the database is still there."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="Only this tenant (slug)")
        parser.add_argument(
            "--anchor",
            nargs="?",
            const="",
            default=None,
            metavar="DIR",
            help="Check the anchored heads (in DIR, default STATEROOM_AUDIT_ANCHOR_DIR)",
        )

    def handle(self, tenant=None, anchor=None, **options):
        tenants = Tenant.objects.order_by("slug")
        if tenant:
            tenants = tenants.filter(slug=tenant)
            if not tenants.exists():
                raise CommandError(f"No tenant {tenant!r}.")
        anchors = {}
        if anchor is not None:
            if anchor_path(anchor or None) is None:
                raise CommandError("--anchor needs a directory or STATEROOM_AUDIT_ANCHOR_DIR.")
            anchors = latest_anchors(anchor or None)
        for tenant_obj in tenants:
            with in_tenant(tenant_obj):
                bad = verify_chain(tenant_obj)
                cut = (
                    check_anchor(tenant_obj, anchors[tenant_obj.pk])
                    if tenant_obj.pk in anchors
                    else None
                )
            if bad is not None:
                self.stderr.write(
                    f"BROKEN: tenant {tenant_obj.slug}: event #{bad.seq} "
                    f"({bad.action} {bad.target_type}:{bad.target_id}, id {bad.pk})"
                )
                raise SystemExit(1)
            if cut is not None:
                self.stderr.write(f"BROKEN: tenant {tenant_obj.slug}: {cut}")
                raise SystemExit(1)
            checked = " (anchored head present)" if tenant_obj.pk in anchors else ""
            self.stdout.write(f"ok: tenant {tenant_obj.slug}{checked}")
