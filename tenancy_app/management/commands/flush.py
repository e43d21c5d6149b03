"""`flush` as the owner role: TRUNCATE is the tables' owner's right, not the app's."""

from django.core.management.commands.flush import Command as FlushCommand

from stateroom.database import as_owner


class Command(FlushCommand):
    def handle(self, **options):
        with as_owner(options["database"]):
            return super().handle(**options)
