"""The SDK's HTTP client (httpx2) on the platform's SSRF-guarded transport, with the connector's auth.

The ``mcp`` SDK speaks HTTP through ``httpx2``; the platform's guard (:mod:`connectors.http.transport`)
is an ``httpx`` transport whose every new TCP connection is resolved, checked and pinned by
:mod:`connectors.ssrf`. :class:`GuardedBridge` is an ``httpx2`` transport that hands each request to that
guarded transport, so every request of an MCP session (initialise, calls, the event stream, OAuth token
requests and each redirect hop, which the SDK follows itself within the endpoint's origin) connects
through the one guard. The SDK lets a caller pass its own client (``streamable_http_client(http_client=)``)
or client factory (``sse_client(httpx_client_factory=)``): see the SDK's docstrings in
``mcp/client/streamable_http.py`` and ``mcp/client/sse.py`` and
https://py.sdk.modelcontextprotocol.io/v2/migration/ for the 2.x client API.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import httpx
import httpx2

from connectors.http.auth import AuthError, auth_material, forget_token
from connectors.http.transport import GuardedTransport
from connectors.mcp.config import McpConfig
from connectors.ssrf import SSRFBlocked

TOO_LARGE = "answer is larger than"


class AnswerTooLarge(httpx2.StreamError, httpx2.SSEError):
    """The server's answer passed the connector's limit; the response was closed, unread beyond it.

    A ``StreamError`` and an ``SSEError`` because those are what the SDK turns into an error for the
    waiting request (a JSON answer, an event stream) instead of ending the session."""


class _BridgedStream(httpx2.AsyncByteStream):
    """An ``httpx`` response body read as an ``httpx2`` stream, closed once ``limit`` bytes are passed
    (``None``: no limit, for the session's long-lived event stream, bounded per event by the SDK)."""

    def __init__(self, response: httpx.Response, limit: int | None = None) -> None:
        self._response = response
        self._limit = limit
        self.received = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_raw():
            self.received += len(chunk)
            if self._limit is not None and self.received > self._limit:
                await self._response.aclose()  # stop reading: the rest stays on the server's side
                raise AnswerTooLarge(f"the MCP server's {TOO_LARGE} {self._limit} bytes; reading stopped")
            yield chunk

    async def aclose(self) -> None:
        await self._response.aclose()


class GuardedBridge(httpx2.AsyncBaseTransport):
    """An ``httpx2`` transport that sends through :class:`~connectors.http.transport.GuardedTransport`.

    ``refusals`` keeps what the SSRF guard refused, so the caller can tell the model why a session
    could not be opened (the SDK reports only that the connection failed).
    """

    def __init__(
        self, *, allowed_private_hosts: tuple[str, ...] = (), max_answer_bytes: int | None = None
    ) -> None:
        self._inner = GuardedTransport(allowed_private_hosts=allowed_private_hosts)
        self._max_answer_bytes = max_answer_bytes
        self.refusals: list[str] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        outgoing = httpx.Request(
            request.method,
            str(request.url),
            headers=list(request.headers.multi_items()),
            content=body,
            extensions={k: v for k, v in request.extensions.items() if k == "timeout"},
        )
        try:
            response = await self._inner.handle_async_request(outgoing)
        except SSRFBlocked as exc:
            self.refusals.append(str(exc))
            raise httpx2.ConnectError(str(exc), request=request) from exc
        except httpx.TimeoutException as exc:
            raise httpx2.ReadTimeout(f"timed out ({type(exc).__name__})", request=request) from exc
        except httpx.TransportError as exc:
            raise httpx2.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        # A POST's answer is one request's result: read at most the limit of it.
        limit = self._max_answer_bytes if request.method == "POST" else None
        return httpx2.Response(
            response.status_code,
            headers=list(response.headers.multi_items()),
            stream=_BridgedStream(response, limit),
            request=request,
            extensions={
                k: v for k, v in response.extensions.items() if k in ("http_version", "reason_phrase")
            },
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


class PlatformAuth(httpx2.Auth):
    """The connector's credentials on every MCP request: an API key header, a bearer token, or an OAuth2
    client-credentials token from the platform's token cache (fetched through the guarded transport and
    fetched anew once when the server answers 401)."""

    def __init__(self, config: McpConfig, token_client: httpx.AsyncClient) -> None:
        self._config = config
        self._http_config = config.http_config()
        self._token_client = token_client

    async def _apply(self, request: httpx2.Request, *, force_refresh: bool) -> None:
        material = await auth_material(self._token_client, self._http_config, force_refresh=force_refresh)
        for name, value in material.headers:
            request.headers[name] = value

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        await self._apply(request, force_refresh=False)
        response = yield request
        if response.status_code == 401 and self._config.auth.type == "oauth2_client_credentials":
            await response.aread()
            forget_token(self._http_config)
            await self._apply(request, force_refresh=True)
            yield request


class SessionHttp:
    """The HTTP clients of one MCP session: the SDK's ``httpx2`` client and the OAuth token client,
    both on guarded transports. Close with :meth:`aclose`."""

    def __init__(self, config: McpConfig) -> None:
        self.config = config
        self.bridge = GuardedBridge(
            allowed_private_hosts=config.allowed_private_hosts, max_answer_bytes=config.max_answer_bytes
        )
        self._token_client = httpx.AsyncClient(
            transport=GuardedTransport(allowed_private_hosts=config.allowed_private_hosts),
            follow_redirects=False,
            trust_env=False,
        )
        self._clients: list[httpx2.AsyncClient] = []

    def client(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        """An ``httpx2.AsyncClient`` on the guarded bridge (also the SDK's ``McpHttpClientFactory``)."""
        config = self.config
        kwargs: dict[str, Any] = {
            "transport": self.bridge,
            "timeout": timeout
            or httpx2.Timeout(config.read_timeout, connect=config.connect_timeout, read=config.read_timeout),
            "auth": auth or self.auth(),
            "follow_redirects": False,
            "trust_env": False,
        }
        if headers:
            kwargs["headers"] = headers
        client = httpx2.AsyncClient(**kwargs)
        self._clients.append(client)
        return client

    def auth(self) -> httpx2.Auth | None:
        if self.config.auth.type == "none":
            return None
        return PlatformAuth(self.config, self._token_client)

    def refusal(self) -> str:
        """The SSRF guard's last refusal in this session, or ''."""
        return self.bridge.refusals[-1] if self.bridge.refusals else ""

    async def aclose(self) -> None:
        for client in self._clients:
            await client.aclose()
        await self._token_client.aclose()
        await self.bridge.aclose()


__all__ = ["TOO_LARGE", "AnswerTooLarge", "AuthError", "GuardedBridge", "PlatformAuth", "SessionHttp"]
