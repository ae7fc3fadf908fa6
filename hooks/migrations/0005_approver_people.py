# Approvers are people (issue 20): policies name approver roles beside approver users; raw Feishu open_ids
# are for people without a platform account.
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hooks", "0004_approval_card_states_and_approver_defaults"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalpolicy",
            name="approver_roles",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text=(
                    "Every member holding one of these roles may decide too. No approvers and no roles: "
                    "every approver, admin and owner of the organisation."
                ),
                verbose_name="approver roles",
            ),
        ),
        migrations.AlterField(
            model_name="approvalpolicy",
            name="approver_open_ids",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text=(
                    "Feishu open_ids (ou_…) of people who have no platform account and may decide on the "
                    "card only. Without any Feishu approver the card still goes to the chat, without "
                    "buttons, and says to decide in the approvals inbox."
                ),
                verbose_name="people without a platform account (Feishu open_id)",
            ),
        ),
        migrations.AlterField(
            model_name="approvalpolicy",
            name="approver_users",
            field=models.ManyToManyField(
                blank=True,
                help_text=(
                    "Members with the approver, admin or owner role who may decide, in the web app and on "
                    "the Feishu card (through their linked Feishu account)."
                ),
                related_name="+",
                to=settings.AUTH_USER_MODEL,
                verbose_name="approvers",
            ),
        ),
    ]
