from django.core.management.base import BaseCommand

from demo_app.data import DEMO_TENANTS, ensure_people
from demo_app.routing import load_routing
from demo_app.scenarios import load_scenarios
from tenancy_app.models import Tenant


class Command(BaseCommand):
    help = "Create demo tenants, people of every role, and realistic domain data (idempotent)."

    def handle(self, **options):
        logins = ensure_people()
        self.stdout.write(f"Demo people ready ({len(logins)} logins).")
        for slug, _ in DEMO_TENANTS:
            tenant = Tenant.objects.get(slug=slug)
            if load_routing(tenant):
                self.stdout.write(f"{slug}: approval routing rules, groups and email ready.")
            made = load_scenarios(tenant)
            if made.get("skipped"):
                self.stdout.write(f"{slug}: demo data already there.")
            else:
                self.stdout.write(
                    f"{slug}: {made['sessions']} support sessions, "
                    f"{made['approvals']} pending approvals, {made['tasks']} migration tasks."
                )
