from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from demo_app.data import DEMO_PASSWORD, DEMO_ROLES, DEMO_TENANTS, demo_username
from demo_app.live import local_url, runtime_tokens, start_beat, start_runtime


class Command(BaseCommand):
    help = (
        "Serve the console for the demo, with simulated agents working through the API "
        "beside it, and print the URL and demo logins."
    )

    def add_arguments(self, parser):
        parser.add_argument("--addr", default="127.0.0.1:8000")
        parser.add_argument(
            "--no-runtime",
            action="store_true",
            help="Serve the console only: no simulated agents, no sweeps.",
        )
        parser.add_argument(
            "--cap", type=int, default=12, help="Pending approvals per tenant the agents keep."
        )

    def handle(self, addr, no_runtime, cap, **options):
        self.stdout.write("\nStateroom demo")
        self.stdout.write(f"  Console: http://{addr}/")
        self.stdout.write(f"  Logins (password {DEMO_PASSWORD!r}):")
        for slug, _ in DEMO_TENANTS:
            for role in DEMO_ROLES:
                self.stdout.write(f"    {demo_username(slug, role)}")
        tokens = {} if no_runtime else runtime_tokens()
        if not no_runtime and not tokens:
            self.stdout.write("  No demo tenants yet (run `manage.py load_demo`): no agents.")
        if tokens:
            start_runtime(local_url(addr), tokens, cap=cap)
            start_beat()
            self.stdout.write(
                "  Agents: a support assistant, a payments agent (refunds wait in the approvals"
                " inbox) and a code migration are at work; their log lines start with [runtime]."
            )
            # The agents make many API calls; only failed requests are worth a log
            # line. (runserver configures logging again from settings.LOGGING.)
            loggers = {**settings.LOGGING.get("loggers", {}), "django.server": {"level": "WARNING"}}
            settings.LOGGING = {**settings.LOGGING, "loggers": loggers}
        self.stdout.write("")
        call_command("runserver", addr, use_reloader=False)
