"""`tenancy_token_live`: is a token a request resolved earlier still good, its tenant unchanged?

A request whose bearer token the process already knows (tenancy_app.auth) does
not look it up again: its first tenant statement calls this function with the
token, its tenant and the tenant row's version as the process read it
(`xmin:ctid`, which every UPDATE of the row changes, also one inside the same
transaction). It raises SQLSTATE SR401 (stateroom.sql.GUARD_SQLSTATE) when the
token is revoked or gone, or the tenant row changed: the statement carrying it
does nothing, and the request resolves the token afresh. A definer function,
as `tenancy_token_by_hash`: the app role reads no token row itself.
"""

from django.db import migrations

from tenancy_app.definer import DefinerFunction


class Migration(migrations.Migration):

    dependencies = [
        ("tenancy_app", "0010_tenant_keys"),
    ]

    operations = [
        DefinerFunction(
            "tenancy_token_live",
            "p_token bigint, p_tenant bigint, p_version text",
            "boolean",
            "BEGIN"
            " PERFORM 1 FROM tenancy_app_runtimetoken t JOIN tenancy_app_tenant n"
            " ON n.id = t.tenant_id"
            " WHERE t.id = p_token AND t.tenant_id = p_tenant AND t.revoked_at IS NULL"
            " AND n.xmin::text || ':' || n.ctid::text = p_version;"
            " IF NOT FOUND THEN"
            " RAISE EXCEPTION 'The bearer token was revoked, or its tenant changed.'"
            " USING ERRCODE = 'SR401';"
            " END IF;"
            " RETURN true;"
            " END",
            language="plpgsql",
        ),
    ]
