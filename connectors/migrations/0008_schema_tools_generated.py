"""A database connector's schema tools say they were generated from its schema, not created by hand."""

from django.db import migrations, models


def mark_schema_tools(apps, schema_editor):
    ConnectorAction = apps.get_model("connectors", "ConnectorAction")
    ConnectorAction.objects.exclude(schema_tool="").update(source="schema")


def unmark_schema_tools(apps, schema_editor):
    ConnectorAction = apps.get_model("connectors", "ConnectorAction")
    ConnectorAction.objects.filter(source="schema").update(source="manual")


class Migration(migrations.Migration):
    dependencies = [("connectors", "0007_mcp_tools_unconfirmed_writes")]

    operations = [
        migrations.AlterField(
            model_name="connectoraction",
            name="source",
            field=models.CharField(
                choices=[
                    ("manual", "Created by hand"),
                    ("openapi", "Imported from OpenAPI"),
                    ("mcp", "Discovered on an MCP server"),
                    ("schema", "Generated from the database schema"),
                ],
                default="manual",
                max_length=16,
                verbose_name="source",
            ),
        ),
        migrations.RunPython(mark_schema_tools, unmark_schema_tools),
    ]
