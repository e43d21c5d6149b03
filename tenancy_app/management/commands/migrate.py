"""`migrate` as the owner role, then the app role's grants (stateroom/database.py).

The app connects as a role that owns no table; the tables are created and
altered by the owner role, which then grants the app row access. Without a
configured owner (DATABASE_OWNER_URL) this is Django's own `migrate`.
"""

from django.core.management.commands.migrate import Command as MigrateCommand

from stateroom.database import as_owner, grant_app_role


class Command(MigrateCommand):
    def handle(self, *args, **options):
        database = options["database"]
        with as_owner(database):
            result = super().handle(*args, **options)
            grant_app_role(database)
        return result
