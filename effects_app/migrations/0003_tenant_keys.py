"""Every key carries the tenant: effects (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("effects_app", "0002_initial"),
        ("approvals_app", "0013_tenant_keys"),
        ("runs_app", "0008_tenant_keys"),
    ]

    operations = [
        tenant_pk_index("effects_app_externaleffect"),
        *tenant_foreign_key("effects_app_externaleffect", "run_id", "runs_app_run"),
        migrations.AlterField(
            model_name="externaleffect",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="effects",
                to="runs_app.run",
            ),
        ),
        *tenant_foreign_key(
            "effects_app_externaleffect", "approval_id", "approvals_app_approvalrequest"
        ),
        migrations.AlterField(
            model_name="externaleffect",
            name="approval",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="effects",
                to="approvals_app.approvalrequest",
            ),
        ),
        tenant_primary_key("effects_app_externaleffect"),
    ]
