"""Row-level security on the tenancy tables that hold tenant data.

Retention policies get the forced policy every tenant table has. Tokens and
memberships are read before a tenant is known (a request's bearer token, a
user's tenants at login), so their policy binds the app role (which owns no
table) but not the owner, and three narrow SECURITY DEFINER functions owned by
the owner answer those reads.
"""

from django.db import migrations

from tenancy_app.definer import DefinerFunction
from tenancy_app.rls import EnableRowLevelSecurity


class Migration(migrations.Migration):

    dependencies = [
        ('tenancy_app', '0001_initial'),
    ]

    operations = [
        EnableRowLevelSecurity("retentionpolicy"),
        EnableRowLevelSecurity("runtimetoken", force=False),
        EnableRowLevelSecurity("membership", force=False),
        DefinerFunction(
            "tenancy_token_by_hash",
            "hashed text",
            "SETOF tenancy_app_runtimetoken",
            "SELECT * FROM tenancy_app_runtimetoken WHERE secret_hash = hashed AND revoked_at IS NULL",
        ),
        DefinerFunction(
            "tenancy_token_touch",
            "token_id bigint, seen timestamptz, stale_before timestamptz",
            "void",
            "UPDATE tenancy_app_runtimetoken SET last_used_at = seen WHERE id = token_id"
            " AND (last_used_at IS NULL OR last_used_at < stale_before)",
            volatile=True,
        ),
        DefinerFunction(
            "tenancy_memberships_of",
            "member_id integer",
            "SETOF tenancy_app_membership",
            "SELECT * FROM tenancy_app_membership WHERE user_id = member_id",
        ),
    ]
