"""The connector's settings, by section: the one list the admin form, its fieldsets and the API serializer
build theirs from (each adds its own inputs for the secrets, which are never read back). Each kind of
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
