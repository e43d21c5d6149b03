import django.db.models.deletion
from django.db import migrations, models

from tenancy_app.definer import DefinerFunction
from tenancy_app.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('tenancy_app', '0001_initial'),
    ]

    operations = [
        migrations.CreateModel(
            name='OutboxMessage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('task', models.CharField(max_length=200)),
                ('args', models.JSONField(default=list)),
                ('kwargs', models.JSONField(default=dict)),
                ('created_at', models.DateTimeField()),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('last_error', models.CharField(blank=True, default='', max_length=500)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'indexes': [models.Index(condition=models.Q(('sent_at__isnull', True)), fields=['tenant', 'id'], name='outbox_unsent_idx'), models.Index(fields=['sent_at'], name='outbox_sent_idx')],
            },
        ),
        EnableRowLevelSecurity("outboxmessage", force=False),
        DefinerFunction(
            "outbox_tenants_waiting",
            "",
            "TABLE (tenant_id bigint)",
            "SELECT DISTINCT m.tenant_id FROM outbox_app_outboxmessage m WHERE m.sent_at IS NULL",
        ),
        DefinerFunction(
            "outbox_purge_sent",
            "sent_before timestamptz, max_rows integer",
            "integer",
            "WITH gone AS (DELETE FROM outbox_app_outboxmessage WHERE id IN ("
            "SELECT id FROM outbox_app_outboxmessage WHERE sent_at < sent_before"
            " ORDER BY sent_at LIMIT max_rows) RETURNING 1) SELECT count(*)::integer FROM gone",
            volatile=True,
        ),
    ]
