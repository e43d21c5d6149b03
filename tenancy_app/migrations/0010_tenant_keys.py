"""Every key carries the tenant: groups, retention policies, SSO. Runtime tokens and memberships
are identity tables, read before a tenant is known: reference tables under Citus
(docs/scaling.md), keyed as they are (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("tenancy_app", "0009_sso"),
    ]

    operations = [
        tenant_pk_index("tenancy_app_membergroup"),
        tenant_pk_index("tenancy_app_groupmember"),
        tenant_pk_index("tenancy_app_retentionpolicy"),
        tenant_pk_index("tenancy_app_ssoconfig"),
        tenant_pk_index("tenancy_app_ssoidentity"),
        *tenant_foreign_key("tenancy_app_groupmember", "group_id", "tenancy_app_membergroup"),
        migrations.AlterField(
            model_name="groupmember",
            name="group",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="memberships",
                to="tenancy_app.membergroup",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="groupmember", name="group_member_uniq"),
                migrations.AddConstraint(
                    model_name="groupmember",
                    constraint=models.UniqueConstraint(
                        fields=["tenant", "group", "user"], name="group_member_tenant_uniq"
                    ),
                ),
            ],
            database_operations=tenant_unique(
                "tenancy_app_groupmember",
                "group_member_tenant_uniq",
                ["tenant_id", "group_id", "user_id"],
                ["group_id", "user_id"],
            ),
        ),
        tenant_primary_key("tenancy_app_membergroup"),
        tenant_primary_key("tenancy_app_groupmember"),
        tenant_primary_key("tenancy_app_retentionpolicy"),
        tenant_primary_key("tenancy_app_ssoconfig"),
        tenant_primary_key("tenancy_app_ssoidentity"),
    ]
