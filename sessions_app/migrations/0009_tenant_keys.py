"""Every key carries the tenant: the session's (tenant_id, id) for the foreign keys to it; attachments and
append keys' primary keys. The session's own primary key, and the items' and the
search index's keys, come with the items' migration (issue 40) (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("sessions_app", "0008_force_rls_item_search"),
    ]

    operations = [
        tenant_pk_index("sessions_app_session"),
        tenant_pk_index("sessions_app_sessionattachment"),
        tenant_pk_index("sessions_app_itemappend"),
        *tenant_foreign_key("sessions_app_sessionattachment", "session_id", "sessions_app_session"),
        migrations.AlterField(
            model_name="sessionattachment",
            name="session",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="attachments",
                to="sessions_app.session",
            ),
        ),
        tenant_primary_key("sessions_app_sessionattachment"),
        tenant_primary_key("sessions_app_itemappend"),
    ]
