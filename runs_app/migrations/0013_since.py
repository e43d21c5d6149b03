"""The runs' rollup summed from an origin to each UTC midnight (runs_app.rollup, issue 35): a
month of the dashboard's runs is two reads, not a row per quarter. Under the tenants'
row-level security like the other rollup tables."""

import django.db.models.deletion
import stateroom.postgres.tenant_keys
from django.db import migrations, models

from tenancy_app.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):

    dependencies = [
        ('runs_app', '0012_rollup'),
        ('tenancy_app', '0010_tenant_keys'),
    ]

    operations = [
        migrations.AddField(
            model_name='runrollup',
            name='days_from',
            field=models.DateTimeField(null=True),
        ),
        migrations.AddField(
            model_name='runrollup',
            name='days_through',
            field=models.DateTimeField(null=True),
        ),
        migrations.CreateModel(
            name='RunSince',
            fields=[
                ('pk', models.CompositePrimaryKey('tenant', 'day', 'status', 'agent', 'reason', blank=True, editable=False, primary_key=True, serialize=False)),
                ('day', models.DateTimeField()),
                ('status', models.CharField(max_length=20)),
                ('agent', models.CharField(max_length=200)),
                ('reason', models.CharField(max_length=200)),
                ('n', models.BigIntegerField()),
                ('tokens', models.BigIntegerField()),
                ('cost', models.DecimalField(decimal_places=6, max_digits=30)),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        EnableRowLevelSecurity("runsince"),
    ]
