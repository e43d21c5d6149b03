"""The pending backlog across tenants, for /metrics (approvals_app.metrics).

The app role is under row-level security and sees one tenant at a time; this
SECURITY DEFINER function answers one narrow question across tenants: per
tenant and risk, how many approvals are pending now and since when. A
`definer_lookup` policy (SELECT only) lets the owner read the table inside
a definer function, as for the outbox (tenancy_app.definer).
"""

from django.db import migrations

from tenancy_app.definer import DefinerFunction

TABLE = "approvals_app_approvalrequest"
CROSSING = "session_user <> current_user"


class Migration(migrations.Migration):
    dependencies = [
        ("approvals_app", "0011_routing_and_assignment"),
        ("tenancy_app", "0008_member_groups"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE POLICY definer_lookup ON {TABLE} FOR SELECT TO CURRENT_USER USING ({CROSSING})",
            f"DROP POLICY IF EXISTS definer_lookup ON {TABLE}",
        ),
        DefinerFunction(
            "approvals_metrics_backlog",
            "",
            "TABLE (tenant_slug text, risk text, pending bigint, oldest timestamptz)",
            "SELECT t.slug::text, a.risk::text, count(*), min(a.created_at)"
            f" FROM {TABLE} a JOIN tenancy_app_tenant t ON t.id = a.tenant_id"
            " WHERE a.status = 'pending' AND (a.expires_at IS NULL OR a.expires_at > now())"
            " GROUP BY t.slug, a.risk",
        ),
    ]
