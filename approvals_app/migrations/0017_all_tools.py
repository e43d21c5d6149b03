"""The waits' quarters gain a histogram per risk over every tool (`tool_name` '',
approvals_app.rollup): the approvals' rollup is emptied, so that the next refresh (beat's,
within a minute) rolls every quarter up again with those rows; until then the dashboard
reads the rows. TRUNCATE, as the owner: FORCE row-level security hides every row from a
DELETE that names no tenant."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("approvals_app", "0016_wait_since"),
    ]

    operations = [
        migrations.RunSQL(
            "TRUNCATE approvals_app_approvalrollup, approvals_app_approvalquarter,"
            " approvals_app_approvalwaitquarter, approvals_app_approvalwaitsince",
            migrations.RunSQL.noop,
        ),
    ]
