"""Lean hot rows (issue 40): the row keeps its parent key `(tenant_id, parent_id)`, not the
tenant's own key (the parent's key proves the tenant: `hot_row_tenant`) nor Django's
one-column indexes (its unique key leads with tenant and parent)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("runs_app", "0010_run_model_and_trace_id"),
        ("tenancy_app", "0010_tenant_keys"),
    ]

    operations = [
        migrations.AlterField(
            model_name="runtransition",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="transitions",
                to="runs_app.run",
            ),
        ),
        migrations.AlterField(
            model_name="runtransition",
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
