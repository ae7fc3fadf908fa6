# Usage accounting: the model endpoints' prices and one UsageRecord per model call (helper I).
import django.core.validators
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0005_mcp_exposure"),
        ("platform_core", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="modelconfig",
            name="price_cached_input",
            field=models.DecimalField(
                blank=True,
                decimal_places=6,
                help_text="Empty: cached input tokens cost the input price.",
                max_digits=12,
                null=True,
                validators=[django.core.validators.MinValueValidator(0)],
                verbose_name="price per million cached input tokens",
            ),
        ),
        migrations.AddField(
            model_name="modelconfig",
            name="price_currency",
            field=models.CharField(
                blank=True,
                help_text="ISO 4217 code, e.g. USD or CNY.",
                max_length=3,
                verbose_name="price currency",
            ),
        ),
        migrations.AddField(
            model_name="modelconfig",
            name="price_input",
            field=models.DecimalField(
                blank=True,
                decimal_places=6,
                max_digits=12,
                null=True,
                validators=[django.core.validators.MinValueValidator(0)],
                verbose_name="price per million input tokens",
            ),
        ),
        migrations.AddField(
            model_name="modelconfig",
            name="price_output",
            field=models.DecimalField(
                blank=True,
                decimal_places=6,
                max_digits=12,
                null=True,
                validators=[django.core.validators.MinValueValidator(0)],
                verbose_name="price per million output tokens",
            ),
        ),
        migrations.CreateModel(
            name="UsageRecord",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                (
                    "purpose",
                    models.CharField(
                        choices=[
                            ("tool_loop", "Tool loop"),
                            ("synthesis", "Answer synthesis"),
                            ("planner", "Planner"),
                            ("analyser", "Plan analyser"),
                            ("router", "Mode router"),
                            ("selection", "Tool selection"),
                            ("compaction", "Context compaction"),
                        ],
                        max_length=16,
                        verbose_name="purpose",
                    ),
                ),
                ("model", models.CharField(blank=True, max_length=200, verbose_name="model name")),
                ("prompt_tokens", models.PositiveIntegerField(default=0, verbose_name="prompt tokens")),
                (
                    "completion_tokens",
                    models.PositiveIntegerField(default=0, verbose_name="completion tokens"),
                ),
                (
                    "cached_tokens",
                    models.PositiveIntegerField(default=0, verbose_name="cached prompt tokens"),
                ),
                ("reasoning_tokens", models.PositiveIntegerField(default=0, verbose_name="reasoning tokens")),
                ("total_tokens", models.PositiveIntegerField(default=0, verbose_name="total tokens")),
                ("estimated", models.BooleanField(default=False, verbose_name="estimated")),
                (
                    "cost",
                    models.DecimalField(
                        blank=True, decimal_places=8, max_digits=18, null=True, verbose_name="cost"
                    ),
                ),
                ("currency", models.CharField(blank=True, max_length=3, verbose_name="currency")),
                (
                    "created_at",
                    models.DateTimeField(default=django.utils.timezone.now, verbose_name="created at"),
                ),
                (
                    "agent",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="agents.agent",
                        verbose_name="agent",
                    ),
                ),
                (
                    "model_config",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="agents.modelconfig",
                        verbose_name="model endpoint",
                    ),
                ),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="platform_core.organization",
                        verbose_name="organisation",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="usage_records",
                        to="agents.run",
                        verbose_name="run",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "usage record",
                "verbose_name_plural": "usage records",
                "ordering": ["-created_at"],
                "indexes": [
                    models.Index(fields=["organization", "created_at"], name="usage_org_time"),
                    models.Index(fields=["organization", "user", "created_at"], name="usage_org_user_time"),
                    models.Index(fields=["organization", "agent", "created_at"], name="usage_org_agent_time"),
                    models.Index(
                        fields=["organization", "model_config", "created_at"], name="usage_org_model_time"
                    ),
                ],
            },
        ),
    ]
