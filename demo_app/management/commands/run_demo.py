import signal
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.core.servers.basehttp import WSGIRequestHandler

from demo_app.data import DEMO_PASSWORD, DEMO_ROLES, DEMO_TENANTS, demo_username
from demo_app.live import (
    broker_reachable,
    demo_broker,
    local_url,
    runtime_tokens,
    start_beat,
    start_runtime,
    start_worker,
)


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
        parser.add_argument(
            "--no-worker",
            action="store_true",
            help="Run background jobs inline in the web process, even if Redis answers.",
        )

    def handle(self, addr, no_runtime, cap, no_worker=False, **options):
        # A plain `kill` stops the demo like Ctrl-C: the worker and the agents stop with it.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        self.stdout.write("\nStateroom demo")
        self.stdout.write(f"  Console: http://{addr}/")
        self.stdout.write(f"  Logins (password {DEMO_PASSWORD!r}):")
        for slug, _ in DEMO_TENANTS:
            for role in DEMO_ROLES:
                self.stdout.write(f"    {demo_username(slug, role)}")
        broker = demo_broker()
        if not no_worker and broker_reachable(broker):
            start_worker(broker)
            self.stdout.write(
                f"  Jobs: a Celery worker on {broker} (content deletion shows its progress)."
            )
        else:
            self.stdout.write(
                f"  Jobs: inline in the web process: no Redis answered at {broker}"
                " (start one: redis-server --port 6379 --bind 127.0.0.1 --daemonize yes)."
                " Everything works, but a content deletion finishes before its page shows,"
                " so there is no progress to watch."
            )
        tokens = {} if no_runtime else runtime_tokens()
        if not no_runtime and not tokens:
            self.stdout.write("  No demo tenants yet (run `manage.py load_demo`): no agents.")
        if tokens:
            start_runtime(local_url(addr), tokens, cap=cap)
            start_beat()
            self.stdout.write(
                "  Agents: a support assistant, a payments agent (refunds wait in the approvals"
                " inbox), a code migration and a LangGraph claims agent (vouchers wait in the"
                " inbox too) are at work; their log lines start with [runtime]."
            )
            # The agents make many API calls; only failed requests are worth a log
            # line. (runserver configures logging again from settings.LOGGING.)
            loggers = {**settings.LOGGING.get("loggers", {}), "django.server": {"level": "WARNING"}}
            settings.LOGGING = {**settings.LOGGING, "loggers": loggers}
        self.stdout.write("")
        # runserver answers keep-alive requests in two writes (headers, then body); with
        # Nagle's algorithm the body waits for the client's delayed ACK: 40 ms a request.
        WSGIRequestHandler.disable_nagle_algorithm = True
        call_command("runserver", addr, use_reloader=False)
