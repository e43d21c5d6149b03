"""The approvals' quarter-hour rollup for the dashboard (approvals_app.rollup, issue 35): the
state per tenant, the rollup tables (under the tenants' row-level security), and the
indexes by creation, decision and void time the refresh and the dashboard's raw reads
need, built CONCURRENTLY (`atomic = False`): approvals are written all along."""

import django.contrib.postgres.fields
import django.db.models.deletion
import stateroom.postgres.tenant_keys
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

from tenancy_app.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ('approvals_app', '0014_tenant_primary_keys'),
        ('runs_app', '0012_rollup'),
        ('tenancy_app', '0010_tenant_keys'),
    ]

    operations = [
        migrations.CreateModel(
            name='ApprovalQuarter',
            fields=[
                ('pk', models.CompositePrimaryKey('tenant', 'quarter', 'kind', blank=True, editable=False, primary_key=True, serialize=False)),
                ('quarter', models.DateTimeField()),
                ('kind', models.CharField(max_length=16)),
                ('n', models.IntegerField()),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        migrations.CreateModel(
            name='ApprovalRollup',
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
            name='ApprovalWaitQuarter',
            fields=[
                ('pk', models.CompositePrimaryKey('tenant', 'quarter', 'risk', 'tool_name', 'bin', blank=True, editable=False, primary_key=True, serialize=False)),
                ('quarter', models.DateTimeField()),
                ('risk', models.CharField(max_length=16)),
                ('tool_name', models.CharField(max_length=200)),
                ('bin', models.SmallIntegerField()),
                ('n', models.IntegerField()),
                ('total', models.FloatField()),
                ('tenant', models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='tenancy_app.tenant')),
            ],
            options={
                'abstract': False,
            },
            bases=(stateroom.postgres.tenant_keys.TenantKeyed, models.Model),
        ),
        AddIndexConcurrently(
            model_name='approvalrequest',
            index=models.Index(fields=['tenant', 'created_at'], name='approval_created_idx'),
        ),
        AddIndexConcurrently(
            model_name='approvalrequest',
            index=models.Index(condition=models.Q(('decided_at__isnull', False)), fields=['tenant', 'decided_at'], name='approval_decided_idx'),
        ),
        AddIndexConcurrently(
            model_name='approvalrequest',
            index=models.Index(condition=models.Q(('voided_at__isnull', False)), fields=['tenant', 'voided_at'], name='approval_voided_idx'),
        ),
        EnableRowLevelSecurity("approvalrollup"),
        EnableRowLevelSecurity("approvalquarter"),
        EnableRowLevelSecurity("approvalwaitquarter"),
    ]
