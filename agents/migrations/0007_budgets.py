# Budgets as guard rails: limits per organisation, user or agent (helper I).
import uuid

import django.core.validators
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import agents.usage.models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0006_usage"),
        ("platform_core", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Budget",
            fields=[
                (
                    "id",
                    models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False),
                ),
                ("name", models.CharField(max_length=100, verbose_name="name")),
                (
                    "scope",
                    models.CharField(
                        choices=[("organization", "Organisation"), ("user", "User"), ("agent", "Agent")],
                        max_length=16,
                        verbose_name="applies to",
                    ),
                ),
                (
                    "metric",
                    models.CharField(
                        choices=[("tokens", "Tokens"), ("cost", "Cost")], max_length=8, verbose_name="counts"
                    ),
                ),
                (
                    "period",
                    models.CharField(
                        choices=[("day", "Day"), ("month", "Month")], max_length=8, verbose_name="period"
                    ),
                ),
                (
                    "limit",
                    models.DecimalField(
                        decimal_places=6,
                        help_text="Tokens, or an amount in the currency below.",
                        max_digits=18,
                        validators=[django.core.validators.MinValueValidator(0)],
                        verbose_name="limit",
                    ),
                ),
                (
                    "currency",
                    models.CharField(
                        blank=True,
                        help_text="For cost budgets: the endpoints' currency.",
                        max_length=3,
                        verbose_name="currency",
                    ),
                ),
                (
                    "time_zone",
                    models.CharField(
                        default="UTC",
                        max_length=64,
                        validators=[agents.usage.models.validate_time_zone],
                        verbose_name="time zone",
                    ),
                ),
                (
                    "warn_percent",
                    models.PositiveSmallIntegerField(
                        blank=True,
                        default=80,
                        help_text="Admins are warned when this share of the limit is used. Empty: no warning.",
                        null=True,
                        validators=[
                            django.core.validators.MinValueValidator(1),
                            django.core.validators.MaxValueValidator(100),
                        ],
                        verbose_name="warn at (%)",
                    ),
                ),
                ("active", models.BooleanField(default=True, verbose_name="active")),
                (
                    "warned_period",
                    models.CharField(
                        blank=True, editable=False, max_length=16, verbose_name="last warned period"
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                (
                    "agent",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="agents.agent",
                        verbose_name="agent",
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
                    "user",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                        verbose_name="user",
                    ),
                ),
            ],
            options={
                "verbose_name": "budget",
                "verbose_name_plural": "budgets",
                "ordering": ["name"],
                "constraints": [
                    models.UniqueConstraint(fields=("organization", "name"), name="unique_budget_name")
                ],
            },
        ),
        migrations.CreateModel(
            name="BudgetCounter",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("period", models.CharField(max_length=16)),
                ("used", models.BigIntegerField(default=0)),
                ("reserved", models.BigIntegerField(default=0)),
                ("in_flight", models.IntegerField(default=0)),
                (
                    "budget",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="counters",
                        to="agents.budget",
                    ),
                ),
            ],
            options={
                "verbose_name": "budget counter",
                "verbose_name_plural": "budget counters",
                "constraints": [
                    models.UniqueConstraint(fields=("budget", "period"), name="unique_budget_counter_period")
                ],
            },
        ),
    ]
