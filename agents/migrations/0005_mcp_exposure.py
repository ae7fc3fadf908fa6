from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("agents", "0004_model_presets"),
    ]

    operations = [
        migrations.AddField(
            model_name="agent",
            name="exposed_over_mcp",
            field=models.BooleanField(
                default=False,
                help_text=(
                    "Offer this agent as a tool of the organisation's MCP server (/mcp/orgs/ and the "
                    "organisation's slug), for MCP clients that authenticate with an API key of a member."
                ),
                verbose_name="exposed over MCP",
            ),
        ),
    ]
