"""Every key carries the tenant: the outbox (issue 38; stateroom/postgres/tenant_keys.py).

Non-atomic: the indexes are built CONCURRENTLY, the foreign keys added NOT VALID and
validated in their own transactions, the primary keys swapped onto built indexes.
"""

from django.db import migrations

from stateroom.postgres.tenant_keys import (
    tenant_pk_index,
    tenant_primary_key,
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("outbox_app", "0003_metrics_depth"),
    ]

    operations = [
        tenant_pk_index("outbox_app_outboxmessage"),
        tenant_primary_key("outbox_app_outboxmessage"),
    ]
