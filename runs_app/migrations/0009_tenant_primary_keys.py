"""Every key carries the tenant: the run's primary key, once the approvals' and
effects' foreign keys to it carry the tenant (issue 38; stateroom/postgres/tenant_keys.py).

Non-atomic: the indexes are built CONCURRENTLY, the foreign keys added NOT VALID and
validated in their own transactions, the primary keys swapped onto built indexes.
"""

from django.db import migrations

from stateroom.postgres.tenant_keys import (
    tenant_primary_key,
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("runs_app", "0008_tenant_keys"),
        ("approvals_app", "0013_tenant_keys"),
        ("effects_app", "0003_tenant_keys"),
    ]

    operations = [
        tenant_primary_key("runs_app_run"),
    ]
