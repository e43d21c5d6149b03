"""Every key carries the tenant: channels, chat links, notifications, preferences (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("notifications_app", "0001_initial"),
    ]

    operations = [
        tenant_pk_index("notifications_app_channel"),
        tenant_pk_index("notifications_app_chatlink"),
        tenant_pk_index("notifications_app_notification"),
        tenant_pk_index("notifications_app_preference"),
        *tenant_foreign_key(
            "notifications_app_chatlink", "channel_id", "notifications_app_channel"
        ),
        migrations.AlterField(
            model_name="chatlink",
            name="channel",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="links",
                to="notifications_app.channel",
            ),
        ),
        *tenant_foreign_key(
            "notifications_app_notification", "channel_id", "notifications_app_channel"
        ),
        migrations.AlterField(
            model_name="notification",
            name="channel",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="notifications",
                to="notifications_app.channel",
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="chatlink", name="chat_link_external_uniq"),
                migrations.AddConstraint(
                    model_name="chatlink",
                    constraint=models.UniqueConstraint(
                        fields=["tenant", "channel", "external_user_id"],
                        name="chat_link_tenant_external_uniq",
                    ),
                ),
            ],
            database_operations=tenant_unique(
                "notifications_app_chatlink",
                "chat_link_tenant_external_uniq",
                ["tenant_id", "channel_id", "external_user_id"],
                ["channel_id", "external_user_id"],
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name="chatlink", name="chat_link_user_uniq"),
                migrations.AddConstraint(
                    model_name="chatlink",
                    constraint=models.UniqueConstraint(
                        fields=["tenant", "channel", "user"], name="chat_link_tenant_user_uniq"
                    ),
                ),
            ],
            database_operations=tenant_unique(
                "notifications_app_chatlink",
                "chat_link_tenant_user_uniq",
                ["tenant_id", "channel_id", "user_id"],
                ["channel_id", "user_id"],
            ),
        ),
        tenant_primary_key("notifications_app_channel"),
        tenant_primary_key("notifications_app_chatlink"),
        tenant_primary_key("notifications_app_notification"),
        tenant_primary_key("notifications_app_preference"),
    ]
