"""Every key carries the tenant: approvals' foreign keys, the routing rule's primary key (issue 38; stateroom/postgres/tenant_keys.py).

Non-atomic: the indexes are built CONCURRENTLY, the foreign keys added NOT VALID and
validated in their own transactions, the primary keys swapped onto built indexes.
"""

import django.db.models.deletion
from django.db import migrations, models

from stateroom.postgres.tenant_keys import (
    tenant_foreign_key,
    tenant_pk_index,
    tenant_primary_key,
    tenant_unique,
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("approvals_app", "0012_metrics_backlog"),
        ("runs_app", "0008_tenant_keys"),
    ]

    operations = [
        tenant_pk_index("approvals_app_approvalrequest"),
        tenant_pk_index("approvals_app_routingrule"),
        *tenant_foreign_key("approvals_app_approvalrequest", "run_id", "runs_app_run"),
        migrations.AlterField(
            model_name="approvalrequest",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="approvals",
                to="runs_app.run",
            ),
        ),
        *tenant_foreign_key(
            "approvals_app_approvalrequest", "replaces_id", "approvals_app_approvalrequest"
        ),
        migrations.AlterField(
            model_name="approvalrequest",
            name="replaces",
            field=models.OneToOneField(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="replaced_by",
                to="approvals_app.approvalrequest",
            ),
        ),
        *tenant_foreign_key(
            "approvals_app_approvalrequest", "route_rule_id", "approvals_app_routingrule"
        ),
        migrations.AlterField(
            model_name="approvalrequest",
            name="route_rule",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="approvals_app.routingrule",
            ),
        ),
        # A OneToOneField is unique on its column in Django's state; in the database the
        # uniqueness is per tenant (Django never reads it back).
        *tenant_unique(
            "approvals_app_approvalrequest",
            "approval_replaces_uniq",
            ["tenant_id", "replaces_id"],
            ["replaces_id"],
        ),
        tenant_primary_key("approvals_app_routingrule"),
    ]
