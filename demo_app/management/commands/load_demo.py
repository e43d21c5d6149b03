from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from approvals_app.tasks import refresh_rollup as refresh_approvals_rollup
from demo_app.data import DEMO_TENANTS, demo_username, ensure_people
from demo_app.history import load_history
from demo_app.routing import load_routing
from demo_app.scenarios import load_scenarios
from runs_app.tasks import refresh_rollup as refresh_runs_rollup
from sessions_app.tasks import index_items
from stateroom.actor import Actor
from tenancy_app.models import Tenant


class Command(BaseCommand):
    help = "Create demo tenants, people of every role, and realistic domain data (idempotent)."

    def handle(self, **options):
        logins = ensure_people()
        self.stdout.write(f"Demo people ready ({len(logins)} logins).")
        for slug, _ in DEMO_TENANTS:
            tenant = Tenant.objects.get(slug=slug)
            history = load_history(tenant, *_people(tenant, "operator", "admin"))
            if not history.get("skipped"):
                self.stdout.write(
                    f"{slug}: a week of history ({history['approvals']} approvals, "
                    f"{history['runs']} runs, {history['deletions']} deletions)."
                )
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
        # What the indexer job would do within a second: the conversations searchable now;
        # and what beat's rollup jobs would within a minute: the week's quarters rolled up.
        index_items()
        refresh_approvals_rollup()
        refresh_runs_rollup()


def _people(tenant: Tenant, *roles: str) -> list[Actor]:
    users = get_user_model().objects
    return [Actor.for_user(users.get(username=demo_username(tenant.slug, r))) for r in roles]
