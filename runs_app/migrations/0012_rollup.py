"""The runs' quarter-hour rollup for the dashboard (runs_app.rollup, issue 35): the state
per tenant, the rollup tables (under the tenants' row-level security), and the index by
creation time the refresh and the dashboard's raw reads need, built CONCURRENTLY
(`atomic = False`): runs are written all along."""

import django.contrib.postgres.fields
import django.db.models.deletion
import stateroom.postgres.tenant_keys
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

from tenancy_app.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('runs_app', '0011_lean_hot_rows'),
        ('sessions_app', '0012_append_is_a_hot_update'),
        ('tasks_app', '0007_lean_hot_rows'),
        ('tenancy_app', '0010_tenant_keys'),
    ]

    operations = [
        migrations.CreateModel(
            name='RunQuarter',
            fields=[
                ('pk', models.CompositePrimaryKey('tenant', 'quarter', 'status', 'agent', 'reason', blank=True, editable=False, primary_key=True, serialize=False)),
                ('quarter', models.DateTimeField()),
                ('status', models.CharField(max_length=20)),
                ('agent', models.CharField(max_length=200)),
                ('reason', models.CharField(max_length=200)),
                ('n', models.IntegerField()),
                ('tokens', models.BigIntegerField()),
                ('cost', models.DecimalField(decimal_places=6, max_digits=24)),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        migrations.CreateModel(
            name='RunRollup',
            fields=[
                ('tenant', models.OneToOneField(on_delete=django.db.models.deletion.PROTECT, primary_key=True, related_name='+', serialize=False, to='tenancy_app.tenant')),
                ('closed_through', models.DateTimeField(null=True)),
                ('open_quarters', django.contrib.postgres.fields.ArrayField(base_field=models.DateTimeField(), default=list, size=None)),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        migrations.CreateModel(
            name='RunSessionQuarter',
            fields=[
                ('pk', models.CompositePrimaryKey('tenant', 'quarter', 'session', blank=True, editable=False, primary_key=True, serialize=False)),
                ('quarter', models.DateTimeField()),
                ('n', models.IntegerField()),
                ('tokens', models.BigIntegerField()),
                ('cost', models.DecimalField(decimal_places=6, max_digits=24)),
                ('session', models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='sessions_app.session')),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        AddIndexConcurrently(
            model_name='run',
            index=models.Index(fields=['tenant', 'created_at'], name='run_created_idx'),
        ),
        EnableRowLevelSecurity("runrollup"),
        EnableRowLevelSecurity("runquarter"),
        EnableRowLevelSecurity("runsessionquarter"),
    ]
