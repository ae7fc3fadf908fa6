# Reserved for helper E's work this round; its operations are filled in by that work.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("platform_core", "0004_approval_config_cooldown"),
    ]

    operations = []
