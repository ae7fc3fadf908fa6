"""MCP sessions, opened once per connector and event loop and reused by every call of that loop.

An SDK session is a stack of async context managers (transport, ``ClientSession``) that must be entered
and left by one task, so each pooled session has an owner task that opens it, initialises it, hands it
over and keeps it open until it is closed or its connection dies. Calls from any task of the loop use the
session's request API. A session whose owner task ended (the server dropped it, the process died) is
replaced on the next call; a caller that sees the server forget the session discards it
(:meth:`McpSessionPool.discard`) and opens a new one. Opening is bounded by the connector's connect and
read timeouts, so a server that never answers blocks nobody: the waiting call times out, the owner task
is cancelled, and other connectors' sessions are independent. A session no call has used for
``MCP_SESSION_IDLE_SECONDS`` (default 30) is closed, so no stream stays open on the server after the
runs that used it ended or were cancelled.
The per-loop pattern is :mod:`connectors.loop_cache`'s (``async_to_sync`` may run each call in a new loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from django.conf import settings
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from connectors.loop_cache import PerLoop
from connectors.mcp.config import McpConfig, StdioNotAllowed, stdio_command_allowed
from connectors.mcp.transport import SessionHttp

logger = logging.getLogger(__name__)

CLOSE_TIMEOUT = 5.0
DEFAULT_IDLE_SECONDS = 30.0


class SessionOpenError(Exception):
    """The session could not be opened; the message is short and secret-free."""


@dataclass(eq=False)
class PooledSession:
    """One open session and its owner task."""

    config: McpConfig
    session: ClientSession
    http: SessionHttp
    task: asyncio.Task[None]
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    active: int = 0  # calls using the session now
    idle_timer: asyncio.TimerHandle | None = None

    @property
    def alive(self) -> bool:
        return not self.task.done()


async def _open_streams(stack: contextlib.AsyncExitStack, config: McpConfig, http: SessionHttp) -> tuple:
    if config.transport == "stdio":
        if not stdio_command_allowed(config.command):  # the operator's setting, checked at every open
            raise StdioNotAllowed("local MCP commands are not allowed for this command")
        params = StdioServerParameters(command=config.command[0], args=list(config.command[1:]))
        streams = await stack.enter_async_context(stdio_client(params))
    elif config.transport == "sse":
        streams = await stack.enter_async_context(
            sse_client(
                config.url,
                timeout=config.connect_timeout + config.read_timeout,
                sse_read_timeout=max(300.0, config.read_timeout),
                httpx_client_factory=http.client,
                auth=http.auth(),
            )
        )
    else:
        streams = await stack.enter_async_context(
            streamable_http_client(
                config.url, http_client=http.client(), max_sse_event_size=config.max_answer_bytes
            )
        )
    return streams[0], streams[1]


async def _own(
    config: McpConfig, http: SessionHttp, ready: asyncio.Future[ClientSession], stop: asyncio.Event
) -> None:
    """Open, initialise and hold one session until ``stop`` is set (the owner task)."""
    try:
        async with contextlib.AsyncExitStack() as stack:
            read, write = await _open_streams(stack, config, http)
            session = await stack.enter_async_context(
                ClientSession(read, write, read_timeout_seconds=config.read_timeout)
            )
            await session.initialize()
            if not ready.done():
                ready.set_result(session)
            await stop.wait()
    except BaseException as exc:  # the owner ends; the waiting opener learns why
        if not ready.done():
            ready.set_exception(SessionOpenError(_open_error(exc, http)))
        if isinstance(exc, asyncio.CancelledError):
            raise
        logger.info("MCP session of connector %s ended (%s)", config.connector_id, type(exc).__name__)
    finally:
        with contextlib.suppress(Exception):
            await http.aclose()


def _open_error(exc: BaseException, http: SessionHttp) -> str:
    refusal = http.refusal()
    if refusal:
        return refusal
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, StdioNotAllowed):
        return "the operator does not allow this local MCP command (MCP_STDIO_ALLOWED_COMMANDS)"
    if isinstance(exc, asyncio.CancelledError | TimeoutError):
        return "the MCP server did not answer in time"
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    return f"could not open an MCP session: {detail}"


async def session_open(config: McpConfig) -> PooledSession:
    """Open and initialise a session (bounded by the connector's timeouts)."""
    http = SessionHttp(config)
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[ClientSession] = loop.create_future()
    stop = asyncio.Event()
    task = asyncio.create_task(_own(config, http, ready, stop), name=f"mcp-session-{config.connector_id}")
    try:
        async with asyncio.timeout(config.connect_timeout + config.read_timeout):
            session = await asyncio.shield(ready)
    except TimeoutError:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise SessionOpenError("the MCP server did not answer in time") from None
    except BaseException:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        raise
    return PooledSession(config=config, session=session, http=http, task=task, stop=stop)


async def session_close(pooled: PooledSession) -> None:
    """Leave the session (its owner task exits its context managers), cancelling it if it hangs."""
    pooled.stop.set()
    try:
        async with asyncio.timeout(CLOSE_TIMEOUT):
            await asyncio.shield(pooled.task)
    except BaseException:
        pooled.task.cancel()
        with contextlib.suppress(BaseException):
            await pooled.task


class McpSessionPool:
    """The sessions of one event loop, by connector configuration."""

    def __init__(self) -> None:
        self._sessions: dict[str, PooledSession] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, config: McpConfig) -> PooledSession:
        """The connector's open session, opening one if there is none or it died."""
        key = config.fingerprint
        current = self._sessions.get(key)
        if current is not None and current.alive:
            return current
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            current = self._sessions.get(key)
            if current is not None and current.alive:
                return current
            self._forget_connector(config.connector_id)
            fresh = await session_open(config)
            self._sessions[key] = fresh
            return fresh

    @contextlib.asynccontextmanager
    async def lease(self, pooled: PooledSession) -> AsyncIterator[PooledSession]:
        """Use ``pooled`` for one call. When its last call ends (answered, failed or cancelled with its
        run), the session is closed after ``MCP_SESSION_IDLE_SECONDS`` unless another call takes it, so
        no stream to the server (the session's event stream included) outlives the runs using it."""
        if pooled.idle_timer is not None:
            pooled.idle_timer.cancel()
            pooled.idle_timer = None
        pooled.active += 1
        try:
            yield pooled
        finally:
            pooled.active -= 1
            if pooled.active == 0 and pooled.alive:
                delay = float(getattr(settings, "MCP_SESSION_IDLE_SECONDS", DEFAULT_IDLE_SECONDS))
                loop = asyncio.get_running_loop()
                pooled.idle_timer = loop.call_later(max(0.0, delay), self._close_idle, pooled)

    def _close_idle(self, pooled: PooledSession) -> None:
        pooled.idle_timer = None
        if pooled.active:
            return
        if self._sessions.get(pooled.config.fingerprint) is pooled:
            del self._sessions[pooled.config.fingerprint]
        pooled.stop.set()  # the owner task leaves the session: its streams close, the server is told

    def _forget_connector(self, connector_id: str) -> None:
        """Drop this connector's sessions of older configurations (closed in the background)."""
        for key, pooled in list(self._sessions.items()):
            if pooled.config.connector_id == connector_id:
                del self._sessions[key]
                pooled.stop.set()

    async def discard(self, pooled: PooledSession) -> None:
        """Forget and close a session the server no longer knows."""
        if self._sessions.get(pooled.config.fingerprint) is pooled:
            del self._sessions[pooled.config.fingerprint]
        await session_close(pooled)

    async def close_all(self) -> None:
        sessions, self._sessions = list(self._sessions.values()), {}
        for pooled in sessions:
            await session_close(pooled)

    def __len__(self) -> int:
        return len(self._sessions)


_pools: PerLoop[McpSessionPool] = PerLoop(McpSessionPool)


def session_pool() -> McpSessionPool:
    """The running loop's pool."""
    return _pools.get()


async def session_pool_close() -> None:
    """Close every session of the running loop (tests, shutdown)."""
    pool = _pools.pop()
    if pool is not None:
        await pool.close_all()


@contextlib.asynccontextmanager
async def session_once(config: McpConfig) -> AsyncIterator[PooledSession]:
    """A session for one piece of work, closed afterwards (sync callers: the admin's "Sync tools")."""
    pooled = await session_open(config)
    try:
        yield pooled
    finally:
        await session_close(pooled)
