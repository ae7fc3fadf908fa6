# API keys (issue 20): ApiToken becomes ApiKey, with organisation keys, scopes, an expiry, the last use
# and revocation details, and the addresses each key was used from. Existing tokens stay personal keys
# with every scope and no expiry.
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import platform_core.models


class Migration(migrations.Migration):
    dependencies = [
        ("platform_core", "0004_approval_config_cooldown"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RenameModel(old_name="ApiToken", new_name="ApiKey"),
        migrations.AlterModelOptions(
            name="apikey",
            options={
                "ordering": ["-created_at", "-id"],
                "verbose_name": "API key",
                "verbose_name_plural": "API keys",
            },
        ),
        migrations.AlterField(
            model_name="apikey",
            name="user",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="api_keys",
                to=settings.AUTH_USER_MODEL,
                verbose_name="user",
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="organization",
            field=models.ForeignKey(
                blank=True,
                help_text="Set for an organisation key; empty for a personal key.",
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="api_keys",
                to="platform_core.organization",
                verbose_name="organisation",
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="created_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="created by",
            ),
        ),
        migrations.AddField(
            model_name="apikey",
            name="scopes",
            field=models.JSONField(default=platform_core.models.all_api_key_scopes, verbose_name="scopes"),
        ),
        migrations.AddField(
            model_name="apikey",
            name="expires_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="expires at"),
        ),
        migrations.AddField(
            model_name="apikey",
            name="last_used_ip",
            field=models.GenericIPAddressField(blank=True, null=True, verbose_name="last used from"),
        ),
        migrations.AddField(
            model_name="apikey",
            name="revoked_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="revoked at"),
        ),
        migrations.AddField(
            model_name="apikey",
            name="revoked_by",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="revoked by",
            ),
        ),
        migrations.CreateModel(
            name="ApiKeyAddress",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("ip_address", models.GenericIPAddressField(verbose_name="IP address")),
                (
                    "first_seen_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="first seen at"),
                ),
                (
                    "key",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="addresses",
                        to="platform_core.apikey",
                    ),
                ),
            ],
            options={
                "verbose_name": "API key address",
                "verbose_name_plural": "API key addresses",
                "constraints": [
                    models.UniqueConstraint(fields=("key", "ip_address"), name="unique_api_key_address")
                ],
            },
        ),
    ]
