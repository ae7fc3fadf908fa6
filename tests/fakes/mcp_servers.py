"""Real MCP servers on loopback, built with the ``mcp`` SDK's server side (``MCPServer``), for the MCP
connector tests.

:class:`FakeMcpServer` serves one ``MCPServer`` over Streamable HTTP at ``/mcp`` and the older HTTP+SSE
transport at ``/sse`` (messages at ``/messages/``), run by uvicorn in a background thread on a free port.
A thin ASGI wrapper lets a test require a bearer token (also issued by an OAuth2 client-credentials
token endpoint at ``/token``), forget every session (the server then answers
"Session not found", as after a restart), redirect ``/moved`` elsewhere, count requests, track the
HTTP requests still open (``open_requests``), and answer a request with raw bytes of its choosing
(``raw_answers``: what a hostile server sends, e.g. a 30 MB result or JSON the SDK would not write).
The tools: ``lookup_order`` (read-only, structured), ``create_payment`` (no annotations: a write),
``delete_order`` (destructive), ``transfer`` (a write that answers when released), ``fail`` (an ``isError`` result), ``sleep`` (hangs), ``big`` (a large
text) and ``chart`` (an image).
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

import uvicorn
from mcp import types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount

PNG_1X1 = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def build_mcp_server(calls: list[tuple[str, dict[str, Any]]], release: threading.Event) -> MCPServer:
    server = MCPServer("fake-erp")

    @server.tool(
        description="Look up one order by its id.",
        annotations=types.ToolAnnotations(readOnlyHint=True, idempotentHint=True),
    )
    def lookup_order(order_id: str) -> dict[str, Any]:
        calls.append(("lookup_order", {"order_id": order_id}))
        return {"order_id": order_id, "status": "shipped", "total": 120.5}

    @server.tool(description="Create a payment.")
    def create_payment(amount: float, currency: str) -> str:
        calls.append(("create_payment", {"amount": amount, "currency": currency}))
        return f"payment of {amount} {currency} created"

    @server.tool(
        description="Delete an order for good.", annotations=types.ToolAnnotations(destructiveHint=True)
    )
    def delete_order(order_id: str) -> str:
        calls.append(("delete_order", {"order_id": order_id}))
        return "deleted"

    @server.tool(description="Always fails.", annotations=types.ToolAnnotations(readOnlyHint=True))
    def fail(reason: str = "no such order") -> str:
        calls.append(("fail", {"reason": reason}))
        raise ToolError(reason)

    @server.tool(description="Waits until released.", annotations=types.ToolAnnotations(readOnlyHint=True))
    async def sleep(seconds: float = 60) -> str:
        calls.append(("sleep", {"seconds": seconds}))
        await asyncio.to_thread(release.wait, seconds)
        return "woke up"

    @server.tool(description="Transfer funds (answers when released).")
    async def transfer(amount: float) -> str:
        calls.append(("transfer", {"amount": amount}))
        await asyncio.to_thread(release.wait, 60)
        return "transferred"

    @server.tool(description="A large text.", annotations=types.ToolAnnotations(readOnlyHint=True))
    def big(size: int = 100_000) -> str:
        calls.append(("big", {"size": size}))
        return "x" * size

    @server.tool(description="A chart as an image.", annotations=types.ToolAnnotations(readOnlyHint=True))
    def chart() -> list[types.ImageContent | types.TextContent]:
        calls.append(("chart", {}))
        return [
            types.TextContent(type="text", text="Sales by month"),
            types.ImageContent(type="image", data=base64.b64encode(PNG_1X1).decode(), mimeType="image/png"),
        ]

    return server


class _Wrapper:
    """ASGI middleware of the fake: auth, forgotten sessions, a redirect, request counting."""

    def __init__(self, owner: FakeMcpServer, app: Any) -> None:
        self.owner = owner
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        owner = self.owner
        headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
        owner.requests.append((scope["method"], scope["path"], headers))
        if scope["path"] == "/token" and scope["method"] == "POST":  # OAuth2 client credentials
            owner.token_requests.append(headers)
            await _reply(send, 200, {"access_token": owner.token, "token_type": "Bearer", "expires_in": 300})
            return
        if owner.token and headers.get("authorization") != f"Bearer {owner.token}":
            await _reply(send, 401, {"error": "unauthorized"}, [(b"www-authenticate", b"Bearer")])
            return
        if scope["path"].startswith("/moved") and owner.redirect_to:
            await _reply(send, 307, {}, [(b"location", owner.redirect_to.encode())])
            return
        if scope["method"] == "POST" and owner.raw_answers:
            receive = await self._maybe_answer_raw(scope, receive, send)
            if receive is None:
                return
        session_id = headers.get("mcp-session-id")
        if session_id:
            if session_id in owner.forgotten:
                error = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                }
                await _reply(send, 404, error)
                return
            owner.sessions.add(session_id)
        key = object()
        owner.open_requests[key] = (scope["method"], scope["path"])
        try:
            await self.app(scope, receive, send)
        finally:
            del owner.open_requests[key]

    async def _maybe_answer_raw(self, scope: dict[str, Any], receive: Callable, send: Callable) -> Any:
        """Answer a JSON-RPC request the test registered in ``raw_answers`` itself (the SDK's server
        would refuse to send such bytes), or hand the request on unchanged (returns its ``receive``)."""
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        method = request.get("method", "") if isinstance(request, dict) else ""
        name = (request.get("params") or {}).get("name", "") if method == "tools/call" else ""
        answer = self.owner.raw_answers.get(f"{method}:{name}" if name else method)
        if answer is None:
            replayed = False

            async def replay() -> dict[str, Any]:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            return replay
        await answer.send(request.get("id"), receive, send)
        return None


class RawAnswer:
    """A JSON-RPC result the fake sends as raw JSON, in chunks, noting how many bytes it handed to the
    server before the client went away (``sent``) and whether it saw the client disconnect."""

    def __init__(self, result_json: bytes, *, chunk: int = 64 * 1024) -> None:
        self.result_json = result_json
        self.chunk = chunk
        self.sent = 0
        self.disconnected = threading.Event()

    async def send(self, request_id: Any, receive: Callable, send: Callable) -> None:
        body = (
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(request_id).encode()
            + b',"result":'
            + self.result_json
            + b"}"
        )
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            self.disconnected.set()

        watcher = asyncio.create_task(watch())
        try:
            for start in range(0, len(body), self.chunk):
                if self.disconnected.is_set():
                    return
                part = body[start : start + self.chunk]
                await send({"type": "http.response.body", "body": part, "more_body": True})
                self.sent += len(part)
                await asyncio.sleep(0)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            await asyncio.wait_for(asyncio.shield(watcher), timeout=0.2)
        except TimeoutError:
            pass
        finally:
            watcher.cancel()


async def _reply(send: Callable, status: int, body: dict[str, Any], extra: list | None = None) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers + (extra or [])})
    await send({"type": "http.response.body", "body": data})


class FakeMcpServer:
    """One fake MCP server on ``127.0.0.1:<free port>`` (use as a ``with`` block)."""

    def __init__(self, *, token: str = "") -> None:
        self.token = token
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.token_requests: list[dict[str, str]] = []
        self.sessions: set[str] = set()
        self.forgotten: set[str] = set()
        self.redirect_to = ""
        # "tools/list" or "tools/call:<tool>" -> a RawAnswer the fake sends itself (hostile servers)
        self.raw_answers: dict[str, RawAnswer] = {}
        self.open_requests: dict[object, tuple[str, str]] = {}  # the HTTP requests the server still serves
        self.release = threading.Event()
        self.mcp = build_mcp_server(self.calls, self.release)
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        streamable = self.mcp.streamable_http_app(transport_security=security)
        sse = self.mcp.sse_app(transport_security=security)
        app = Starlette(
            routes=[Mount("/", app=_Routes(streamable, sse))],
            lifespan=lambda _app: self.mcp.session_manager.run(),
        )
        self._app = _Wrapper(self, app)
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def base_url(self) -> str:
        assert self._socket is not None
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/mcp"

    def calls_of(self, tool: str) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == tool]

    def forget_sessions(self) -> None:
        """Answer "Session not found" to every session opened so far (as after a restart)."""
        self.forgotten |= self.sessions

    def start(self) -> FakeMcpServer:
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.bind(("127.0.0.1", 0))
        config = uvicorn.Config(self._app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self._server = uvicorn.Server(config)
        started = threading.Event()

        def serve() -> None:
            async def main() -> None:
                assert self._server is not None
                task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
                while not self._server.started and not task.done():  # noqa: ASYNC110 (uvicorn has a flag)
                    await asyncio.sleep(0.01)
                started.set()
                await task

            asyncio.run(main())

        self._thread = threading.Thread(target=serve, daemon=True, name="fake-mcp-server")
        self._thread.start()
        if not started.wait(10):
            raise RuntimeError("the fake MCP server did not start")
        return self

    def stop(self) -> None:
        self.release.set()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._socket is not None:
            self._socket.close()

    def __enter__(self) -> FakeMcpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Routes:
    """``/sse`` and ``/messages/`` to the SSE app, everything else to the Streamable HTTP app."""

    def __init__(self, streamable: Any, sse: Any) -> None:
        self.streamable = streamable
        self.sse = sse

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path.startswith("/sse") or path.startswith("/messages")):
            await self.sse(scope, receive, send)
        else:
            await self.streamable(scope, receive, send)


if __name__ == "__main__":  # the same tools over stdio: python -m tests.fakes.mcp_servers
    build_mcp_server([], threading.Event()).run("stdio")
