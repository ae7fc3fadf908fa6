"""An MCP connector row as the plain config the MCP client uses (credentials decrypted).

Runs synchronously (it decrypts loaded ORM values); async callers wrap it with ``sync_to_async``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from django.conf import settings

from connectors.adapter_types import HttpAuth, HttpConnectorConfig
from connectors.http.config import http_auth_for
from connectors.models import Connector, McpTransport

ANSWER_ENVELOPE_BYTES = 64 * 1024


class StdioNotAllowed(Exception):
    """The connector names a local command the operator has not allowed (``MCP_STDIO_ALLOWED_COMMANDS``)."""


@dataclass(frozen=True, slots=True)
class McpConfig:
    """One MCP server: how to reach it, how to authenticate, and its limits."""

    connector_id: str
    transport: str  # connectors.models.McpTransport
    url: str = ""
    auth: HttpAuth = field(default_factory=HttpAuth)
    command: tuple[str, ...] = ()
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    max_response_bytes: int = 1_000_000
    allowed_private_hosts: tuple[str, ...] = ()

    @property
    def max_answer_bytes(self) -> int:
        """The most the client reads of one answer of the server: twice the maximum response size (a
        result often repeats its structured content as text, and JSON escapes text) plus 64 kB of
        protocol envelope. Reading stops there; the result is an error, never read whole."""
        return 2 * self.max_response_bytes + ANSWER_ENVELOPE_BYTES

    @property
    def fingerprint(self) -> str:
        """Changes whenever anything that shapes a session changes (a pooled session is then re-opened)."""
        raw = repr(
            (self.connector_id, self.transport, self.url, self.auth, self.command, self.allowed_private_hosts)
        )
        return hashlib.sha256(raw.encode()).hexdigest()

    def http_config(self) -> HttpConnectorConfig:
        """The view of the platform's HTTP auth helpers (OAuth2 token cache, auth headers)."""
        return HttpConnectorConfig(
            connector_id=self.connector_id,
            base_url=self.url,
            auth=self.auth,
            connect_timeout=self.connect_timeout,
            read_timeout=self.read_timeout,
            allowed_private_hosts=self.allowed_private_hosts,
        )


def stdio_command_allowed(command: tuple[str, ...]) -> bool:
    """Whether the operator allows this command (its first element, matched exactly)."""
    allowed = set(getattr(settings, "MCP_STDIO_ALLOWED_COMMANDS", []) or [])
    return bool(command) and command[0] in allowed


def mcp_config_for(connector: Connector) -> McpConfig:
    """The MCP client's config for ``connector`` (decrypts its credentials).

    Raises :class:`StdioNotAllowed` for a stdio connector whose command the operator does not allow now
    (the setting is read at every call, not only when the admin saved the connector).
    """
    command = tuple(str(a) for a in (connector.mcp_command or ()))
    if connector.mcp_transport == McpTransport.STDIO and not stdio_command_allowed(command):
        raise StdioNotAllowed("local MCP commands are not allowed for this command")
    return McpConfig(
        connector_id=str(connector.pk),
        transport=connector.mcp_transport,
        url=connector.base_url,
        auth=http_auth_for(connector),
        command=command,
        connect_timeout=connector.connect_timeout,
        read_timeout=connector.read_timeout,
        max_response_bytes=connector.max_response_bytes,
        allowed_private_hosts=tuple(connector.allowed_private_hosts or ()),
    )
