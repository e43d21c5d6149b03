from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from stateroom import ports
from stateroom.actor import Actor
from tenancy_app.models import Tenant
from tenancy_app.scoping import in_tenant


class Command(BaseCommand):
    help = "Create a tenant."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--name", default="")

    def handle(self, slug, name, **options):
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"Tenant {slug!r} already exists.")
        with transaction.atomic():
            tenant = Tenant.objects.create(slug=slug, name=name or slug)
            with in_tenant(tenant):
                ports.audit().record_event(
                    tenant=tenant,
                    actor=Actor.system("manage.py create_tenant"),
                    action="tenant.created",
                    target_type="tenant",
                    target_id=slug,
                    after={"name": tenant.name},
                )
        self.stdout.write(f"Created tenant {slug}.")
