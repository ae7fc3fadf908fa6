# Reserved for helper H's work this round; its operations are filled in by that work.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("platform_core", "0005_api_keys"),
    ]

    operations = []
