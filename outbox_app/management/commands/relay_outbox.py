import time

from django.core.management.base import BaseCommand

from outbox_app.relay import relay_all


class Command(BaseCommand):
    help = "Publish the jobs waiting in the outbox to Celery, once or every --interval seconds."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="One pass, then exit")
        parser.add_argument("--interval", type=float, default=2.0, help="Seconds between passes")

    def handle(self, *, once: bool, interval: float, **options):
        while True:
            try:
                published = relay_all()
            except Exception as exc:  # the database may be down too: try again next pass
                self.stderr.write(f"relay pass failed: {type(exc).__name__}: {exc}")
                published = 0
            if published:
                self.stdout.write(f"published {published}")
            if once:
                return
            time.sleep(interval)
