"""FORCE row-level security on the outbox, as on every tenant table.

The relay's two cross-tenant questions (which tenants have messages waiting,
purge sent ones) are SECURITY DEFINER functions: the `definer_lookup` policy
lets the owner cross tenants only inside them (tenancy_app.definer).
"""

from django.db import migrations

from tenancy_app.definer import force_with_definer_lookup


class Migration(migrations.Migration):

    dependencies = [
        ("outbox_app", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(*force_with_definer_lookup("outbox_app_outboxmessage")),
    ]
