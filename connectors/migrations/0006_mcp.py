# MCP connectors (issue 18): the MCP kind, its transport and command, discovered tools and the call's MCP method.
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("connectors", "0005_pg_family"),
    ]

    operations = [
        migrations.AddField(
            model_name="connector",
            name="mcp_command",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text='For stdio MCP connectors: the command and its arguments as a JSON list, e.g. ["mcp-server-time", "--local-timezone", "UTC"]. The operator must allow the command.',
                verbose_name="MCP command",
            ),
        ),
        migrations.AddField(
            model_name="connector",
            name="mcp_transport",
            field=models.CharField(
                choices=[
                    ("streamable_http", "Streamable HTTP"),
                    ("sse", "HTTP with server-sent events (older servers)"),
                    ("stdio", "Local command (stdio, operator-enabled only)"),
                ],
                default="streamable_http",
                help_text="For MCP connectors: the base URL is the server's MCP endpoint, e.g. https://host/mcp.",
                max_length=16,
                verbose_name="MCP transport",
            ),
        ),
        migrations.AddField(
            model_name="connectoraction",
            name="mcp_annotations",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="The hints the MCP server gave (readOnlyHint, destructiveHint, idempotentHint).",
                verbose_name="MCP tool annotations",
            ),
        ),
        migrations.AddField(
            model_name="connectoraction",
            name="mcp_tool",
            field=models.CharField(
                blank=True,
                help_text="Set by 'Sync tools': the tool's name on the MCP server.",
                max_length=200,
                verbose_name="MCP tool",
            ),
        ),
        migrations.AddField(
            model_name="connectorcalllog",
            name="mcp_method",
            field=models.CharField(
                blank=True,
                help_text="For MCP connectors, e.g. 'tools/call'.",
                max_length=64,
                verbose_name="MCP method",
            ),
        ),
        migrations.AlterField(
            model_name="connector",
            name="kind",
            field=models.CharField(
                choices=[("http", "HTTP API"), ("database", "SQL database"), ("mcp", "MCP server")],
                default="http",
                max_length=16,
                verbose_name="kind",
            ),
        ),
        migrations.AlterField(
            model_name="connectoraction",
            name="is_write_override",
            field=models.BooleanField(
                default=False,
                help_text="Keep 'writes data' as set here instead of deriving it from the method, SQL or MCP annotations.",
                verbose_name="override 'writes data'",
            ),
        ),
        migrations.AlterField(
            model_name="connectoraction",
            name="source",
            field=models.CharField(
                choices=[
                    ("manual", "Created by hand"),
                    ("openapi", "Imported from OpenAPI"),
                    ("mcp", "Discovered on an MCP server"),
                ],
                default="manual",
                max_length=16,
                verbose_name="source",
            ),
        ),
    ]
