# Linked identities: a platform user's accounts at Feishu or an OIDC provider (issue 20).
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("platform_core", "0005_api_keys"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="LinkedIdentity",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("provider", models.CharField(max_length=64, verbose_name="provider")),
                ("subject", models.CharField(max_length=255, verbose_name="subject")),
                (
                    "open_id",
                    models.CharField(
                        blank=True, db_index=True, max_length=128, verbose_name="Feishu open_id"
                    ),
                ),
                ("union_id", models.CharField(blank=True, max_length=128, verbose_name="Feishu union_id")),
                (
                    "tenant_key",
                    models.CharField(blank=True, max_length=128, verbose_name="Feishu tenant key"),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                ("last_seen_at", models.DateTimeField(blank=True, null=True, verbose_name="last seen at")),
                (
                    "organization",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="platform_core.organization",
                        verbose_name="linked by hand in",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="linked_identities",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "linked identity",
                "verbose_name_plural": "linked identities",
                "constraints": [
                    models.UniqueConstraint(
                        fields=("provider", "subject"), name="unique_linked_identity_subject"
                    )
                ],
            },
        ),
    ]
