"""The user agent of each event, and which canonical JSON its hash was taken of.

Both columns are added without touching a row (PostgreSQL stores the default
for existing rows in the catalog), so the append-only trigger is never asked
to let an UPDATE through. Existing rows read `canon` 1: their hashes were
taken of the older JSON spelling, and verification recomputes them that way.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('audit_app', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditevent',
            name='user_agent',
            field=models.CharField(blank=True, default='', max_length=256),
        ),
        migrations.AddField(
            model_name='auditevent',
            name='canon',
            field=models.PositiveSmallIntegerField(default=1),
        ),
        migrations.AlterField(
            model_name='auditevent',
            name='canon',
            field=models.PositiveSmallIntegerField(default=2),
        ),
    ]
