"""The waits' histograms summed from an origin to each UTC midnight (approvals_app.rollup,
issue 35): a month of the dashboard's waits is two reads, not one per quarter. Under the
tenants' row-level security like the other rollup tables."""

import django.db.models.deletion
import stateroom.postgres.tenant_keys
from django.db import migrations, models

from tenancy_app.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):

    dependencies = [
        ('approvals_app', '0015_rollup'),
        ('tenancy_app', '0010_tenant_keys'),
    ]

    operations = [
        migrations.AddField(
            model_name='approvalrollup',
            name='days_from',
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name='approvalrollup',
            name='days_through',
            field=models.DateTimeField(null=True),
        ),
        migrations.CreateModel(
            name='ApprovalWaitSince',
            fields=[
                ('pk', models.CompositePrimaryKey('tenant', 'day', 'tool_name', 'risk', 'bin', blank=True, editable=False, primary_key=True, serialize=False)),
                ('day', models.DateTimeField()),
                ('tool_name', models.CharField(max_length=200)),
                ('risk', models.CharField(max_length=16)),
                ('bin', models.SmallIntegerField()),
                ('n', models.BigIntegerField()),
                ('total', models.FloatField()),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        EnableRowLevelSecurity("approvalwaitsince"),
    ]
