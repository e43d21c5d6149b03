"""Every key carries the tenant: runs' events, transitions and node executions;
the run's foreign keys to its session and task (issue 38; stateroom/postgres/tenant_keys.py).

Non-atomic: the indexes are built CONCURRENTLY, the foreign keys added NOT VALID and
validated in their own transactions, the primary keys swapped onto built indexes.
"""

import django.db.models.deletion
from django.db import migrations, models

from stateroom.postgres.tenant_keys import (
    tenant_foreign_key,
    tenant_pk_index,
    tenant_primary_key,
)


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("runs_app", "0007_run_now"),
        ("sessions_app", "0009_tenant_keys"),
        ("tasks_app", "0005_tenant_keys"),
    ]

    operations = [
        tenant_pk_index("runs_app_run"),
        tenant_pk_index("runs_app_runevent"),
        tenant_pk_index("runs_app_runtransition"),
        tenant_pk_index("runs_app_nodeexecution"),
        *tenant_foreign_key("runs_app_run", "session_id", "sessions_app_session"),
        migrations.AlterField(
            model_name="run",
            name="session",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="runs",
                to="sessions_app.session",
            ),
        ),
        *tenant_foreign_key("runs_app_run", "task_id", "tasks_app_task"),
        migrations.AlterField(
            model_name="run",
            name="task",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="runs",
                to="tasks_app.task",
            ),
        ),
        *tenant_foreign_key("runs_app_runevent", "run_id", "runs_app_run"),
        migrations.AlterField(
            model_name="runevent",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="events",
                to="runs_app.run",
            ),
        ),
        *tenant_foreign_key("runs_app_runtransition", "run_id", "runs_app_run"),
        migrations.AlterField(
            model_name="runtransition",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="transitions",
                to="runs_app.run",
            ),
        ),
        *tenant_foreign_key("runs_app_nodeexecution", "run_id", "runs_app_run"),
        migrations.AlterField(
            model_name="nodeexecution",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="node_executions",
                to="runs_app.run",
            ),
        ),
        tenant_primary_key("runs_app_runevent"),
        tenant_primary_key("runs_app_runtransition"),
        tenant_primary_key("runs_app_nodeexecution"),
    ]
