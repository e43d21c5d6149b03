"""Every key carries the tenant: the task's primary key, once the runs' foreign keys
to it carry the tenant (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("tasks_app", "0005_tenant_keys"),
        ("runs_app", "0008_tenant_keys"),
    ]

    operations = [
        tenant_primary_key("tasks_app_task"),
    ]
