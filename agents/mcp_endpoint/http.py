"""The ASGI app of ``/mcp/orgs/<slug>/``: admits the caller, then hands the request to the MCP host.

Every HTTP request (the initialize, each message, the GET stream, the DELETE) is authenticated anew, so a
revoked key stops working at once; and a request still open when its key is revoked or expires (a tool
call's stream, the GET stream) ends its session, as the client's DELETE would, within seconds. The
admitted caller rides in the ASGI scope, and ``scope["user"]`` is the SDK's
:class:`~mcp.server.auth.middleware.bearer_auth.AuthenticatedUser` for the key, organisation and user:
the SDK's session manager binds each MCP session to it, so a session id cannot be used with another key
or under another organisation's path.

The ``Host`` header is checked against ``ALLOWED_HOSTS`` like any Django request (DNS rebinding), and so
is ``Origin`` when a browser sends one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from channels.db import database_sync_to_async
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from agents.mcp_endpoint.caller import CALLER_SCOPE_KEY, Caller, CallerRefused, caller_admit
from platform_core.identity.api_keys.authentication import bearer_token_from_header
from platform_core.identity.api_keys.watch import KeyWatch, key_lapse
from platform_core.request_meta import client_ip_from_scope

logger = logging.getLogger(__name__)
ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]

#: How long a request may take to end by itself once its session was ended, before it is cut.
SESSION_END_GRACE_SECONDS = 1.0

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
        watch = KeyWatch(key_id=admitted.key_id, expires_at=admitted.key_expires_at)
        await _served_while_key_live(self.host, scope, receive, send, watch=watch)


async def _served_while_key_live(
    app: ASGIApp, scope: dict[str, Any], receive: Any, send: Any, *, watch: KeyWatch
) -> None:
    """Serve the request with ``app`` until it ends or its key lapses (revoked or expired). On a lapse the
    request's session ends as the client's DELETE would end it (every stream of the session closes, its
    tool calls in flight are cancelled, and so are their runs); then what is left of this request is cut:
    a 401 when nothing was answered yet, else the end of the response."""
    response = _ResponseState(send)
    served = asyncio.ensure_future(app(scope, receive, response.send))
    lapse = asyncio.ensure_future(key_lapse(watch))
    try:
        await asyncio.wait({served, lapse}, return_when=asyncio.FIRST_COMPLETED)
        if served.done():
            return served.result()
        session_id = _header(scope, b"mcp-session-id")
        if session_id:
            await _session_end(app, scope)
        with contextlib.suppress(TimeoutError):  # the session's end closes this request's stream
            await asyncio.wait_for(asyncio.shield(served), SESSION_END_GRACE_SECONDS)
        if not served.done():
            served.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await served
        lapsed = lapse.result()
        if not response.started:
            await _respond(
                send,
                401,
                {"error": "invalid_token", "error_description": f"The API key is {lapsed.reason}."},
                [(b"www-authenticate", b'Bearer error="invalid_token"')],
            )
        elif not response.finished:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        for task in (served, lapse):
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
    return None


class _ResponseState:
    """``send`` that remembers how far the response got."""

    def __init__(self, send: Any) -> None:
        self._send = send
        self.started = False
        self.finished = False

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        elif message["type"] == "http.response.body" and not message.get("more_body", False):
            self.finished = True
        await self._send(message)


async def _session_end(app: ASGIApp, scope: dict[str, Any]) -> None:
    """End the request's MCP session as its client's ``DELETE`` would (same session id, same caller)."""
    kept = (b"host", b"mcp-session-id", b"mcp-protocol-version")
    delete = {
        **scope,
        "method": "DELETE",
        "query_string": b"",
        "headers": [(name, value) for name, value in scope.get("headers") or () if name in kept],
    }
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if asked:
            return {"type": "http.disconnect"}
        asked = True
        return {"type": "http.request", "body": b"", "more_body": False}

    async def discard(message: dict[str, Any]) -> None:
        return None

    try:
        await app(delete, receive, discard)
    except Exception:  # the session may be gone already (another request of it ended it)
        logger.debug("ending an MCP session of a lapsed key failed", exc_info=True)
