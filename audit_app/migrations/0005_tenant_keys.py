"""Every key carries the tenant: audit events and their payloads (issue 38; stateroom/postgres/tenant_keys.py).

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
        ("audit_app", "0004_security_notice"),
    ]

    operations = [
        tenant_pk_index("audit_app_auditevent"),
        tenant_pk_index("audit_app_auditpayload"),
        *tenant_foreign_key("audit_app_auditpayload", "event_id", "audit_app_auditevent"),
        migrations.AlterField(
            model_name="auditpayload",
            name="event",
            field=models.OneToOneField(
                db_constraint=False,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="payload",
                to="audit_app.auditevent",
            ),
        ),
        # A OneToOneField is unique on its column in Django's state; in the database the
        # uniqueness is per tenant (Django never reads it back).
        *tenant_unique(
            "audit_app_auditpayload",
            "audit_payload_event_uniq",
            ["tenant_id", "event_id"],
            ["event_id"],
        ),
        tenant_primary_key("audit_app_auditevent"),
        tenant_primary_key("audit_app_auditpayload"),
    ]
