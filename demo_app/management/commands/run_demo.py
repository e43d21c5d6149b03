from django.core.management import call_command
from django.core.management.base import BaseCommand

from demo_app.data import DEMO_PASSWORD, DEMO_ROLES, DEMO_TENANTS, demo_username


class Command(BaseCommand):
    help = "Serve the console for the demo and print the URL and demo logins."

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000")

    def handle(self, addr, **options):
        self.stdout.write("\nStateroom demo")
        self.stdout.write(f"  Console: http://{addr}/")
        self.stdout.write(f"  Logins (password {DEMO_PASSWORD!r}):")
        for slug, _ in DEMO_TENANTS:
            for role in DEMO_ROLES:
                self.stdout.write(f"    {demo_username(slug, role)}")
        self.stdout.write("")
        call_command("runserver", addr, use_reloader=False)
