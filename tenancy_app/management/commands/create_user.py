import os

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from stateroom.actor import Actor
from tenancy_app.models import Role, Tenant
from tenancy_app.scoping import in_tenant
from tenancy_app.store import TenancyStore


class Command(BaseCommand):
    help = "Create a user (or update its password) and give it a role in a tenant."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument(
            "--password-env", help="Name of the environment variable holding the password"
        )

    def handle(self, username, tenant, role, password_env, **options):
        tenant_obj = Tenant.objects.filter(slug=tenant).first()
        if tenant_obj is None:
            raise CommandError(f"No tenant {tenant!r}.")
        password = None
        if password_env:
            password = os.environ.get(password_env)
            if not password:
                raise CommandError(f"Environment variable {password_env} is empty.")
        user, created = get_user_model().objects.get_or_create(username=username)
        if password:
            user.set_password(password)
        elif created:
            user.set_unusable_password()
        user.save()
        with in_tenant(tenant_obj):
            TenancyStore(tenant_obj, Actor.system("manage.py create_user")).set_member(
                username=username, role=role
            )
        self.stdout.write(
            f"{'Created' if created else 'Updated'} {username} as {role} in {tenant}."
        )
