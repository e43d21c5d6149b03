"""Lean hot rows (issue 40): an effect keeps its run and approval keys `(tenant_id, …)`,
not the tenant's own key (the run's key proves the tenant: `hot_row_tenant`) nor
Django's one-column indexes (every index leads with the tenant). The approval's
index becomes `(tenant_id, approval_id)`, partial: most effects have no approval.
It is built CONCURRENTLY before the old one goes (`atomic = False`): an approval's
deletion always has an index to check its effects by."""

import django.db.models.deletion
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("approvals_app", "0014_tenant_primary_keys"),
        ("effects_app", "0003_tenant_keys"),
        ("runs_app", "0011_lean_hot_rows"),
        ("tenancy_app", "0010_tenant_keys"),
    ]

    operations = [
        AddIndexConcurrently(
            model_name="externaleffect",
            index=models.Index(
                condition=models.Q(("approval__isnull", False)),
                fields=["tenant", "approval"],
                name="effect_approval_idx",
            ),
        ),
        migrations.AlterField(
            model_name="externaleffect",
            name="approval",
            field=models.ForeignKey(
                blank=True,
                db_constraint=False,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="effects",
                to="approvals_app.approvalrequest",
            ),
        ),
        migrations.AlterField(
            model_name="externaleffect",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                db_index=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="effects",
                to="runs_app.run",
            ),
        ),
        migrations.AlterField(
            model_name="externaleffect",
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
