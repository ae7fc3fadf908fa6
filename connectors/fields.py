"""The connector's and its actions' settings, by section: the one list the admin forms, their fieldsets and
the API serializers build theirs from (each adds its own inputs for the secrets, which are never read back). Each kind of
connector names the settings it uses from these sections (``ConnectorKindAdapter.settings``,
:mod:`connectors.kinds`)."""

from __future__ import annotations

IDENTITY = ("name", "description", "kind")
HTTP = ("base_url", "idempotency_header")
# An MCP connector's server URL is ``base_url``; stdio servers name a command the operator allows.
MCP = ("mcp_transport", "mcp_command")
AUTHENTICATION = (
    "auth_type",
    "auth_key_name",
    "auth_username",
    "oauth_client_id",
    "oauth_token_url",
    "oauth_scope",
)
DATABASE_ENGINE = ("engine",)
# What the agent may read of a database, and for how long its schema answers are reused.
DATABASE_LIMITS = (
    "statement_timeout_ms",
    "max_rows",
    "schema_allow_list",
    "schema_samples",
    "schema_cache_seconds",
)
NETWORK_LIMITS = ("connect_timeout", "read_timeout", "max_response_bytes")
PRIVATE_HOSTS = ("allowed_private_hosts",)

#: Every setting a connector's form edits, in the form's order (the secrets apart).
EDITABLE = (
    *IDENTITY,
    "is_active",
    *HTTP,
    *MCP,
    *AUTHENTICATION,
    *DATABASE_ENGINE,
    *DATABASE_LIMITS,
    *NETWORK_LIMITS,
    *PRIVATE_HOSTS,
)

# A connector action: the operation it runs, its MCP tool (set by "Sync tools"), whether it writes and
# where it came from.
ACTION_OPERATION = (
    "name",
    "description",
    "method",
    "path_template",
    "sql_template",
    "free_form",
    "parameters",
    "param_locations",
)
ACTION_MCP_TOOL = ("mcp_tool", "mcp_annotations")
ACTION_MCP_CONFIRMATION = ("mcp_read_confirmed_at", "mcp_read_confirmed_by")
ACTION_WRITES = ("is_write", "is_write_override")
ACTION_ORIGIN = ("source", "removed_by_import_at")
