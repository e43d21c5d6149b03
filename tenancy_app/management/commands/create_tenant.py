from django.core.management.base import BaseCommand, CommandError

from stateroom.actor import Actor
from stateroom.errors import Conflict
from tenancy_app.store import TenancyStore


class Command(BaseCommand):
    help = "Create a tenant."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, slug, name, **options):
        try:
            TenancyStore.create_tenant(
                slug=slug, name=name, actor=Actor.system("manage.py create_tenant")
            )
        except Conflict as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Created tenant {slug}.")
