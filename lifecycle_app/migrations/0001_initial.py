# The content deletion jobs move from sessions_app to lifecycle_app, the
# orchestrator that runs them through the domain stores: the table is renamed
# (rows, constraints, indexes and its row-level security policy come along),
# sessions_app.0004 drops the model from its state. Status `pending` becomes
# `queued` (API.md); jobs get a heartbeat; erasures are new.

import django.db.models.deletion
from django.db import migrations, models

from tenancy_app.rls import EnableRowLevelSecurity


def pending_to_queued(apps, schema_editor):
    """Per tenant: forced row-level security shows the owner one tenant's rows at a time."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id FROM tenancy_app_tenant")
        for (tenant_id,) in cursor.fetchall():
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            cursor.execute(
                "UPDATE lifecycle_app_deletion SET status = 'queued' WHERE status = 'pending'"
            )
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


def queued_to_pending(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT id FROM tenancy_app_tenant")
        for (tenant_id,) in cursor.fetchall():
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(tenant_id)])
            cursor.execute(
                "UPDATE lifecycle_app_deletion SET status = 'pending' WHERE status = 'queued'"
            )
        cursor.execute("SELECT set_config('app.tenant_id', '', true)")


STATUS_CHOICES = [
    ("queued", "Queued"),
    ("running", "Running"),
    ("done", "Done"),
    ("refused", "Refused"),
    ("failed", "Failed"),
]


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ("sessions_app", "0004_item_search_user_prefix"),
        ("tenancy_app", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "ALTER TABLE sessions_app_contentdeletion RENAME TO lifecycle_app_deletion",
                    "ALTER TABLE lifecycle_app_deletion RENAME TO sessions_app_contentdeletion",
                ),
            ],
            state_operations=[
                migrations.CreateModel(
                    name="Deletion",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("deletion_id", models.CharField(max_length=128)),
                        ("status", models.CharField(choices=STATUS_CHOICES, default="queued", max_length=16)),
                        ("requested_by", models.CharField(max_length=200)),
                        ("requested_by_id", models.CharField(blank=True, default="", max_length=64)),
                        ("reason", models.TextField(blank=True, default="")),
                        ("policy", models.CharField(blank=True, default="manual", max_length=200)),
                        ("planned", models.JSONField(default=dict)),
                        ("counts", models.JSONField(default=dict)),
                        ("error", models.TextField(blank=True, default="")),
                        ("created_at", models.DateTimeField()),
                        ("started_at", models.DateTimeField(blank=True, null=True)),
                        ("finished_at", models.DateTimeField(blank=True, null=True)),
                        ("session", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="deletions", to="sessions_app.session")),
                        ("tenant", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="tenancy_app.tenant")),
                    ],
                    options={
                        "indexes": [models.Index(fields=["tenant", "session", "id"], name="deletion_session_idx"), models.Index(fields=["tenant", "status", "id"], name="deletion_status_idx")],
                        "constraints": [models.UniqueConstraint(fields=("tenant", "deletion_id"), name="deletion_public_id_uniq")],
                    },
                ),
            ],
        ),
        migrations.RunPython(pending_to_queued, queued_to_pending),
        migrations.AddField(
            model_name="deletion",
            name="heartbeat_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="deletion",
            name="worker",
            field=models.CharField(blank=True, default="", max_length=200),
        ),
        migrations.AddField(
            model_name="deletion",
            name="requeues",
            field=models.IntegerField(default=0),
        ),
        migrations.CreateModel(
            name="Erasure",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("erasure_id", models.CharField(max_length=128)),
                ("user_id", models.CharField(max_length=128)),
                ("requested_by", models.CharField(max_length=200)),
                ("requested_by_id", models.CharField(blank=True, default="", max_length=64)),
                ("reason", models.TextField()),
                ("sessions", models.JSONField(default=list)),
                ("created_at", models.DateTimeField()),
                ("tenant", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+", to="tenancy_app.tenant")),
            ],
            options={
                "indexes": [models.Index(fields=["tenant", "user_id", "id"], name="erasure_user_idx")],
                "constraints": [models.UniqueConstraint(fields=("tenant", "erasure_id"), name="erasure_public_id_uniq")],
            },
        ),
        EnableRowLevelSecurity("erasure"),
        migrations.AddField(
            model_name="deletion",
            name="erasure",
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name="deletions", to="lifecycle_app.erasure"),
        ),
        migrations.AddIndex(
            model_name="deletion",
            index=models.Index(condition=models.Q(("status__in", ["queued", "running"])), fields=["tenant", "heartbeat_at"], name="deletion_open_heartbeat_idx"),
        ),
    ]
