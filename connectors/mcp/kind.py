"""The MCP server kind of connector (:class:`~connectors.kinds.ConnectorKindAdapter`): a server reached at
a URL or run as an operator-allowed local command, whose actions are the tools it lists."""

from __future__ import annotations

import time
from collections.abc import Mapping, Set
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from connectors import fields
from connectors.adapter_types import ConnectionFailed, ConnectionTestResult, ConnectionWorks
from connectors.http.kind import AUTH_NEEDS, credential_errors, outbound_url_errors
from connectors.kinds import ActionCalled, CallFacts, ToolText
from connectors.mcp.client import METHOD_CALL, McpFailure, mcp_call_tool, mcp_list_tools
from connectors.mcp.config import McpConfig, mcp_config_for
from connectors.mcp.pool import SessionOpenError, session_once
from connectors.mcp.trust import annotations_contradict
from connectors.models import AuthType, Connector, ConnectorAction, ConnectorKind, McpTransport
from connectors.scrub import scrub

MCP_AUTH_TYPES = frozenset(
    {AuthType.NONE, AuthType.API_KEY_HEADER, AuthType.BEARER, AuthType.OAUTH2_CLIENT_CREDENTIALS}
)
# The settings each of those needs besides the secret, as for an HTTP API.
_AUTH_NEEDS = {auth_type: needs for auth_type, needs in AUTH_NEEDS.items() if auth_type in MCP_AUTH_TYPES}


class McpKind:
    """An MCP server: its URL and credentials, or a local command the operator allows; its tools are its
    actions, each a write until an admin confirms it as a read (:mod:`connectors.mcp.confirm`)."""

    kind = ConnectorKind.MCP.value
    settings: tuple[str, ...] = (
        "base_url",
        *fields.MCP,
        *fields.AUTHENTICATION,
        "auth_secret",
        *fields.NETWORK_LIMITS,
        *fields.PRIVATE_HOSTS,
    )
    call_log_method = METHOD_CALL
    private_arguments: frozenset[str] = frozenset()
    tools_from_connectors = True

    def connector_errors(self, connector: Connector) -> dict[str, Any]:
        """A URL and usable credentials, or an operator-allowed command."""
        errors: dict[str, Any] = {}
        if connector.mcp_transport == McpTransport.STDIO:
            command = connector.mcp_command
            allowed = list(getattr(settings, "MCP_STDIO_ALLOWED_COMMANDS", []))
            if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
                errors["mcp_command"] = _("Give the command and its arguments as a JSON list of strings.")
            elif command[0] not in allowed:
                errors["mcp_command"] = _(
                    "This command is not allowed: the operator lists allowed MCP commands in "
                    "MCP_STDIO_ALLOWED_COMMANDS."
                )
            return errors
        if not connector.base_url:
            errors["base_url"] = _("An MCP connector needs the server's URL.")
        if connector.auth_type not in MCP_AUTH_TYPES:
            errors["auth_type"] = _(
                "MCP connectors use no authentication, an API key header, a bearer token or OAuth2 "
                "client credentials."
            )
        errors.update(credential_errors(connector, _AUTH_NEEDS))
        return errors

    def outbound_errors(
        self, connector: Connector, *, allowed_private_hosts: list[str], found: Set[str]
    ) -> dict[str, ValidationError]:
        """A server on a URL is checked as an HTTP API is; a local command reaches nothing by itself."""
        if connector.mcp_transport == McpTransport.STDIO:
            return {}
        return outbound_url_errors(connector, allowed_private_hosts)

    def connector_saved(self, connector: Connector) -> None:
        """Nothing here: the admin and the API sync the tools after a save and show what changed
        (:func:`connectors.mcp.sync.mcp_sync_after_save`)."""
        return None

    def action_errors(self, action: ConnectorAction) -> dict[str, Any]:
        errors: dict[str, Any] = {}
        if not action.mcp_tool:
            errors["mcp_tool"] = _("An MCP action names a tool of the server; use 'Sync tools'.")
        if action.method or action.path_template or action.sql_template or action.free_form:
            errors["method"] = _("MCP actions have no HTTP method, path or SQL.")
        return errors

    def action_is_write(self, action: ConnectorAction) -> bool:
        """The server's annotations are untrusted hints: a tool is a write until an admin confirmed it as
        a read, and always a write when its annotations contradict each other."""
        if not action.mcp_tool:
            return False
        return action.mcp_read_confirmed_at is None or annotations_contradict(action.mcp_annotations)

    def call_write_reason(self, action: CallFacts, arguments: Mapping[str, Any]) -> str | None:
        """A read only when it is not a write and an admin confirmed it as one: the server's annotations
        alone never make a tool a read (:mod:`connectors.mcp.trust`)."""
        if action.is_write:
            return "this action writes data"
        if not action.mcp_read_confirmed:
            return "no admin has confirmed this MCP tool as a read"
        return None

    def tool_text(self, action: ConnectorAction) -> ToolText:
        return ToolText(target=f"MCP tool {action.mcp_tool}")

    def tool_timeout(self, action: ConnectorAction) -> float:
        # Opening a session, and once more when the server dropped it; each bounded by the client.
        connector = action.connector
        return (connector.connect_timeout + 2 * connector.read_timeout) * 2 + 5

    def call_config(self, connector: Connector) -> McpConfig:
        """Raises :class:`~connectors.mcp.config.StdioNotAllowed` for a command the operator does not
        allow now."""
        return mcp_config_for(connector)

    def action_spec(self, action: ConnectorAction) -> str:
        """An MCP action's spec is its tool's name on the server."""
        return action.mcp_tool

    async def call(
        self,
        config: McpConfig,
        spec: str,
        arguments: Mapping[str, Any],
        *,
        idempotency_key: str | None,
        is_write: bool,
    ) -> ActionCalled:
        called = await mcp_call_tool(config, spec, arguments, is_write=is_write)
        return ActionCalled(called.outcome, called.artifacts)

    async def test_connection(self, config: McpConfig, secrets: tuple[str, ...]) -> ConnectionTestResult:
        """Open a session, list the tools, close it."""
        started = time.perf_counter()
        try:
            async with session_once(config) as pooled:
                listing = await mcp_list_tools(config, pooled=pooled)
        except SessionOpenError as exc:
            listing = McpFailure(str(exc))
        latency = (time.perf_counter() - started) * 1000
        if isinstance(listing, McpFailure):
            return ConnectionFailed(reason=scrub(listing.error, secrets), latency_ms=latency)
        return ConnectionWorks(
            detail=f"connected: the server lists {len(listing.tools)} tools", latency_ms=latency
        )
