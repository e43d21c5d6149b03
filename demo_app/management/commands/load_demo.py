from django.core.management.base import BaseCommand

from demo_app.data import ensure_people


class Command(BaseCommand):
    help = "Create demo tenants, people of every role, and realistic domain data (idempotent)."

    def handle(self, **options):
        logins = ensure_people()
        self.stdout.write(f"Demo people ready ({len(logins)} logins).")
