"""FORCE row-level security on runtime tokens and memberships, as on every tenant table.

Until now their policy bound the app role but not the owner, so that the
SECURITY DEFINER functions (owned by the owner) could read across tenants.
Now the owner is bound too, except through the `definer_lookup` policy while
one of those functions runs for the app role (see tenancy_app.definer).
"""

from django.db import migrations

from tenancy_app.definer import force_with_definer_lookup


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy_app", "0006_tenant_unclaimed_run_warning"),
    ]

    operations = [
        migrations.RunSQL(*force_with_definer_lookup("tenancy_app_runtimetoken")),
        migrations.RunSQL(*force_with_definer_lookup("tenancy_app_membership")),
    ]
