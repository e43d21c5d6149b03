"""Every key carries the tenant: deletions and erasures (issue 38; stateroom/postgres/tenant_keys.py).

Non-atomic: the indexes are built CONCURRENTLY, the foreign keys added NOT VALID and
validated in their own transactions, the primary keys swapped onto built indexes.
"""

import django.db.models.deletion
from django.db import migrations, models

from stateroom.postgres.tenant_keys import (
    tenant_foreign_key,
    tenant_pk_index,
    tenant_primary_key,
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("lifecycle_app", "0001_initial"),
        ("sessions_app", "0009_tenant_keys"),
    ]

    operations = [
        tenant_pk_index("lifecycle_app_deletion"),
        tenant_pk_index("lifecycle_app_erasure"),
        *tenant_foreign_key("lifecycle_app_deletion", "session_id", "sessions_app_session"),
        migrations.AlterField(
            model_name="deletion",
            name="session",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="deletions",
                to="sessions_app.session",
            ),
        ),
        *tenant_foreign_key("lifecycle_app_deletion", "erasure_id", "lifecycle_app_erasure"),
        migrations.AlterField(
            model_name="deletion",
            name="erasure",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="deletions",
                to="lifecycle_app.erasure",
            ),
        ),
        tenant_primary_key("lifecycle_app_deletion"),
        tenant_primary_key("lifecycle_app_erasure"),
    ]
