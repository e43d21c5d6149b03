from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenancy_app", "0002_tenancy_rls"),
    ]

    operations = [
        migrations.AddField(
            model_name="tenant",
            name="require_2fa",
            field=models.BooleanField(default=False),
        ),
    ]
