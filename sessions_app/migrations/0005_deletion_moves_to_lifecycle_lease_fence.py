# ContentDeletion now lives in lifecycle_app (its 0001 renamed the table):
# only the model state goes here. Sessions get their lease length (renewed by
# every activity) and the content fence.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("sessions_app", "0004_item_search_user_prefix"),
        ("lifecycle_app", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ContentDeletion")],
            database_operations=[],
        ),
        migrations.AddField(
            model_name="session",
            name="lease_seconds",
            field=models.IntegerField(db_default=2592000, default=2592000),
        ),
        migrations.AddField(
            model_name="session",
            name="content_fenced_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
    ]
