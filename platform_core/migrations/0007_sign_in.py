# Sign-in (issue 20): per-organisation sign-in settings (password sign-in on or off) and the sign-in rules
# that say which Feishu tenants or e-mail domains join which organisation with which role.
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("platform_core", "0006_linked_identity"),
    ]

    operations = [
        migrations.CreateModel(
            name="SignInSettings",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "password_login",
                    models.BooleanField(
                        default=True,
                        help_text=(
                            "Off: members of this organisation cannot sign in with a username and password; they "
                            "sign in with the single sign-on providers of the sign-in rules below."
                        ),
                        verbose_name="password sign-in",
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
            ],
            options={
                "verbose_name": "sign-in settings",
                "verbose_name_plural": "sign-in settings",
                "constraints": [models.UniqueConstraint(fields=("organization",), name="unique_sign_in_settings")],
            },
        ),
        migrations.CreateModel(
            name="SignInRule",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "provider",
                    models.CharField(
                        help_text="'feishu', or the id of an OpenID Connect provider of this deployment.",
                        max_length=64,
                        verbose_name="provider",
                    ),
                ),
                (
                    "feishu_tenant_key",
                    models.CharField(
                        blank=True,
                        help_text="Feishu rules: the tenant_key of the Feishu organisation whose users may join.",
                        max_length=128,
                        verbose_name="Feishu tenant key",
                    ),
                ),
                (
                    "email_domain",
                    models.CharField(
                        blank=True,
                        help_text="OpenID Connect rules: users with a verified e-mail address at this domain may join.",
                        max_length=253,
                        verbose_name="e-mail domain",
                    ),
                ),
                (
                    "role",
                    models.CharField(
                        choices=[("member", "Member"), ("approver", "Approver"), ("admin", "Admin")],
                        default="member",
                        max_length=16,
                        verbose_name="default role",
                    ),
                ),
                ("created_at", models.DateTimeField(auto_now_add=True, verbose_name="created at")),
                (
                    "organization",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="platform_core.organization",
                        verbose_name="organisation",
                    ),
                ),
            ],
            options={
                "verbose_name": "sign-in rule",
                "verbose_name_plural": "sign-in rules",
                "ordering": ["provider", "feishu_tenant_key", "email_domain"],
                "constraints": [
                    models.UniqueConstraint(
                        fields=("organization", "provider", "feishu_tenant_key", "email_domain"),
                        name="unique_sign_in_rule",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("feishu_tenant_key", ""), models.Q(("email_domain", ""), _negated=True)),
                            models.Q(models.Q(("feishu_tenant_key", ""), _negated=True), ("email_domain", "")),
                            _connector="OR",
                        ),
                        name="sign_in_rule_one_match",
                    ),
                ],
            },
        ),
    ]
