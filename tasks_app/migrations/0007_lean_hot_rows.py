"""Lean hot rows (issue 40): the row keeps its parent key `(tenant_id, parent_id)`, not the
tenant's own key (the parent's key proves the tenant: `hot_row_tenant`) nor Django's
one-column indexes (its unique key leads with tenant and parent)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tasks_app", "0006_tenant_primary_keys"),
        ("tenancy_app", "0010_tenant_keys"),
    ]

    operations = [
        migrations.AlterField(
            model_name="taskcheckpoint",
            name="task",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="checkpoints",
                to="tasks_app.task",
            ),
        ),
        migrations.AlterField(
            model_name="taskcheckpoint",
            name="tenant",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="+",
                to="tenancy_app.tenant",
            ),
        ),
    ]
