from django.core.management.base import BaseCommand

from demo_app.data import DEMO_TENANTS, ensure_people
from demo_app.scenarios import load_scenarios
from tenancy_app.models import Tenant


class Command(BaseCommand):
    help = "Create demo tenants, people of every role, and realistic domain data (idempotent)."

    def handle(self, **options):
        logins = ensure_people()
        self.stdout.write(f"Demo people ready ({len(logins)} logins).")
        for slug, _ in DEMO_TENANTS:
            made = load_scenarios(Tenant.objects.get(slug=slug))
            if made.get("skipped"):
                self.stdout.write(f"{slug}: demo data already there.")
            else:
                self.stdout.write(
                    f"{slug}: {made['sessions']} support sessions, "
                    f"{made['approvals']} pending approvals, {made['tasks']} migration tasks."
                )
