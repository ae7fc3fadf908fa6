from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("hooks", "0002_approval_binding"),
    ]

    operations = [
        migrations.AddField(
            model_name="approvalrequest",
            name="hold_reason",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The policy's condition that matched, or why it could not be evaluated.",
                verbose_name="why it was held",
            ),
        ),
    ]
