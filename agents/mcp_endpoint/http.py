"""The ASGI app of ``/mcp/orgs/<slug>/``: admits the caller, then hands the request to the MCP host.

Every HTTP request (the initialize, each message, the GET stream, the DELETE) is authenticated anew, so a
revoked key stops working at once. The admitted caller rides in the ASGI scope, and ``scope["user"]`` is
the SDK's :class:`~mcp.server.auth.middleware.bearer_auth.AuthenticatedUser` for the key, organisation
and user: the SDK's session manager binds each MCP session to it, so a session id cannot be used with
another key or under another organisation's path.

The ``Host`` header is checked against ``ALLOWED_HOSTS`` like any Django request (DNS rebinding), and so
is ``Origin`` when a browser sends one.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from agents.mcp_endpoint.caller import CALLER_SCOPE_KEY, Caller, CallerRefused, caller_admit
from platform_core.authentication import bearer_token_from_header
from platform_core.request_meta import client_ip_from_scope

PATH = re.compile(r"^/mcp/orgs/(?P<slug>[-a-zA-Z0-9_]{1,64})/?$")


def _header(scope: dict[str, Any], name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key == name:
            return value.decode("latin-1")
    return ""


async def _respond(
    send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def _host_allowed(value: str) -> bool:
    if not value:
        return False
    domain, _port = split_domain_port(value)
    allowed = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


def _access_token(caller: Caller) -> AccessToken:
    """The SDK's view of the caller: what it binds a session to (never the key itself)."""
    return AccessToken(
        token=f"key:{caller.key_id}",
        client_id=f"key:{caller.key_id}",
        scopes=[],
        subject=str(caller.user_id),
        claims={"iss": f"org:{caller.organization_slug}"},
    )


class AgentsMcpApp:
    """``/mcp/orgs/<slug>/``: authenticate, then serve through ``host`` (an :class:`McpHost`)."""

    def __init__(self, host: Any) -> None:
        self.host = host

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        match = PATH.match(scope.get("path", ""))
        if match is None:
            await _respond(send, 404, {"error": "not_found", "error_description": "No MCP server here."})
            return
        origin = _header(scope, b"origin")
        if not _host_allowed(_header(scope, b"host")) or (
            origin and not _host_allowed(urlsplit(origin).netloc)
        ):
            await _respond(
                send, 403, {"error": "forbidden", "error_description": "Host or origin not allowed."}
            )
            return
        admitted = await database_sync_to_async(caller_admit)(
            raw_key=bearer_token_from_header(_header(scope, b"authorization")),
            organization_slug=match["slug"],
            accept_language=_header(scope, b"accept-language"),
            ip_address=client_ip_from_scope(scope),
        )
        if isinstance(admitted, CallerRefused):
            headers = (
                [(b"www-authenticate", b'Bearer error="invalid_token"')] if admitted.status == 401 else []
            )
            if admitted.retry_after is not None:
                headers.append((b"retry-after", str(admitted.retry_after).encode()))
            await _respond(
                send,
                admitted.status,
                {"error": admitted.error, "error_description": admitted.description},
                headers,
            )
            return
        scope = {**scope, "user": AuthenticatedUser(_access_token(admitted)), CALLER_SCOPE_KEY: admitted}
        await self.host(scope, receive, send)
