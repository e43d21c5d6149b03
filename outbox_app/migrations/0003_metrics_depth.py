"""The outbox's depth and oldest waiting job across tenants, for /metrics (outbox_app.metrics).

A SECURITY DEFINER function, as `outbox_tenants_waiting` (0001): the outbox's
`definer_lookup` policy (0002) lets it read unsent rows of every tenant.
"""

from django.db import migrations

from tenancy_app.definer import DefinerFunction


class Migration(migrations.Migration):
    dependencies = [
        ("outbox_app", "0002_force_rls_outbox"),
    ]

    operations = [
        DefinerFunction(
            "outbox_metrics_depth",
            "",
            "TABLE (tenant_slug text, waiting bigint, oldest timestamptz)",
            "SELECT t.slug::text, count(*), min(m.created_at)"
            " FROM outbox_app_outboxmessage m JOIN tenancy_app_tenant t ON t.id = m.tenant_id"
            " WHERE m.sent_at IS NULL GROUP BY t.slug",
        ),
    ]
