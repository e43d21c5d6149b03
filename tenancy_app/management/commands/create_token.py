from django.core.management.base import BaseCommand, CommandError

from stateroom.actor import Actor
from tenancy_app.models import Tenant, TokenRole
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore


class Command(BaseCommand):
    help = (
        "Create a runtime token and print it (only the token, once, on stdout); with"
        " --webhook-url, the webhook signing secret goes to stderr."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--name", default="runtime")
        parser.add_argument("--role", default=TokenRole.RUNTIME, choices=TokenRole.values)
        parser.add_argument("--webhook-url", default="")

    def handle(self, tenant, name, role, webhook_url, **options):
        tenant_obj = Tenant.objects.filter(slug=tenant).first()
        if tenant_obj is None:
            raise CommandError(f"No tenant {tenant!r}.")
        with in_tenant(tenant_obj):
            token, raw = TenancyStore(
                tenant_obj, Actor.system("manage.py create_token")
            ).create_token(name=name, role=role, webhook_url=webhook_url)
        self.stdout.write(raw)
        if token.webhook_secret:
            self.stderr.write(f"Webhook signing secret: {token.webhook_secret}")
