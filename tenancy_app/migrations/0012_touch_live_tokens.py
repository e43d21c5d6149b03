"""`tenancy_token_touch` stamps a live token only.

A request whose token the process already knows stamps `last_used_at` (at most
once a minute) before its first tenant statement finds the token revoked
(`tenancy_token_live`, migration 0011) and the request answers 401: the stamp
said a revoked token had been used. The stamp now skips revoked tokens.
"""

from django.db import migrations

from tenancy_app.definer import DefinerFunction

SIGNATURE = "token_id bigint, seen timestamptz, stale_before timestamptz"
STAMP = (
    "UPDATE tenancy_app_runtimetoken SET last_used_at = seen WHERE id = token_id"
    " AND (last_used_at IS NULL OR last_used_at < stale_before)"
)


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy_app", "0011_token_live"),
    ]

    operations = [
        DefinerFunction(
            "tenancy_token_touch",
            SIGNATURE,
            "void",
            STAMP + " AND revoked_at IS NULL",
            volatile=True,
            replaces=STAMP,
        ),
    ]
