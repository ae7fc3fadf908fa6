# Fallback endpoints: a model endpoint may name another of its organisation's endpoints to answer when it is
# unavailable (helper J).
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0007_budgets"),
    ]

    operations = [
        migrations.AddField(
            model_name="modelconfig",
            name="fallback",
            field=models.ForeignKey(
                blank=True,
                help_text=(
                    "Answers when this endpoint is unavailable (rate limited, server errors, timeouts); it may "
                    "name its own fallback. Same organisation only."
                ),
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="fallback_for",
                to="agents.modelconfig",
                verbose_name="fallback endpoint",
            ),
        ),
    ]
