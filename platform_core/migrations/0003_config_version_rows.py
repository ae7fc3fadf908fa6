"""Every existing organisation gets its configuration version row (new ones get theirs when created)."""

import secrets

from django.db import migrations


def create_rows(apps, schema_editor):
    Organization = apps.get_model("platform_core", "Organization")
    ConfigVersion = apps.get_model("platform_core", "ConfigVersion")
    have = set(ConfigVersion.objects.values_list("organization_id", flat=True))
    ConfigVersion.objects.bulk_create(
        ConfigVersion(organization_id=pk, version=secrets.randbits(62))
        for pk in Organization.objects.values_list("pk", flat=True)
        if pk not in have
    )


class Migration(migrations.Migration):
    dependencies = [("platform_core", "0002_config_version")]

    operations = [migrations.RunPython(create_rows, migrations.RunPython.noop)]
