"""Every key carries the tenant: tasks' checkpoints and LangGraph rows (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("tasks_app", "0004_task_langgraph_thread_id"),
    ]

    operations = [
        tenant_pk_index("tasks_app_task"),
        tenant_pk_index("tasks_app_taskcheckpoint"),
        tenant_pk_index("tasks_app_graphcheckpoint"),
        tenant_pk_index("tasks_app_graphblob"),
        tenant_pk_index("tasks_app_graphwrite"),
        *tenant_foreign_key("tasks_app_taskcheckpoint", "task_id", "tasks_app_task"),
        migrations.AlterField(
            model_name="taskcheckpoint",
            name="task",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="checkpoints",
                to="tasks_app.task",
            ),
        ),
        *tenant_foreign_key("tasks_app_graphcheckpoint", "task_id", "tasks_app_task"),
        migrations.AlterField(
            model_name="graphcheckpoint",
            name="task",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="graph_checkpoints",
                to="tasks_app.task",
            ),
        ),
        *tenant_foreign_key("tasks_app_graphblob", "task_id", "tasks_app_task"),
        migrations.AlterField(
            model_name="graphblob",
            name="task",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="graph_blobs",
                to="tasks_app.task",
            ),
        ),
        *tenant_foreign_key("tasks_app_graphwrite", "task_id", "tasks_app_task"),
        migrations.AlterField(
            model_name="graphwrite",
            name="task",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="graph_writes",
                to="tasks_app.task",
            ),
        ),
        tenant_primary_key("tasks_app_taskcheckpoint"),
        tenant_primary_key("tasks_app_graphcheckpoint"),
        tenant_primary_key("tasks_app_graphblob"),
        tenant_primary_key("tasks_app_graphwrite"),
    ]
