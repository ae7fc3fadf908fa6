"""Run the SDK's Streamable HTTP session manager inside whichever ASGI server serves the platform.

The session manager needs its task group running (``StreamableHTTPSessionManager.run()``, normally entered
in a Starlette lifespan). Daphne sends no ASGI lifespan events, and ``manage.py runserver`` (daphne's) none
either, so the host enters ``run()`` itself, in a task of its own, on the first request an event loop
serves; each manager runs once (the SDK forbids a second ``run()``), so a new event loop (tests) gets a new
manager. :meth:`McpHost.aclose` ends them (tests and graceful shutdown); at process exit they end with
their loop.

SDK: ``mcp/server/streamable_http_manager.py`` (``run()`` "can only be called once per instance";
``handle_request`` raises unless ``run()`` is active).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

logger = logging.getLogger(__name__)

ASGIScope = dict[str, Any]


@dataclass
class _Running:
    manager: StreamableHTTPSessionManager
    task: asyncio.Task[None]
    stop: asyncio.Event


class McpHost:
    """An ASGI app serving one low-level MCP server over Streamable HTTP, one session manager per loop."""

    def __init__(
        self,
        server: Server[Any],
        *,
        make_manager: Callable[[Server[Any]], StreamableHTTPSessionManager] | None = None,
    ) -> None:
        self.server = server
        self._make_manager = make_manager or (lambda server: StreamableHTTPSessionManager(app=server))
        self._running: dict[asyncio.AbstractEventLoop, _Running] = {}
        self._starting: dict[asyncio.AbstractEventLoop, asyncio.Future[_Running]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # every manager's task, until it ends

    async def __call__(self, scope: ASGIScope, receive: Any, send: Any) -> None:
        running = await self._manager()
        await running.manager.handle_request(scope, receive, send)

    async def _manager(self) -> _Running:
        loop = asyncio.get_running_loop()
        running = self._running.get(loop)
        if running is not None and not running.task.done():
            return running
        starting = self._starting.get(loop)
        if starting is None:
            self._forget_closed_loops()
            starting = loop.create_future()
            self._starting[loop] = starting
            stop = asyncio.Event()
            manager = self._make_manager(self.server)
            task = loop.create_task(self._serve(manager, starting, stop), name="mcp-session-manager")
            starting.add_done_callback(lambda _f: self._starting.pop(loop, None))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await asyncio.shield(starting)

    async def _serve(
        self, manager: StreamableHTTPSessionManager, started: asyncio.Future[_Running], stop: asyncio.Event
    ) -> None:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        try:
            async with manager.run():
                running = _Running(manager, task, stop)
                self._running[loop] = running
                if not started.done():
                    started.set_result(running)
                await stop.wait()
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc if isinstance(exc, Exception) else RuntimeError("MCP host stopped"))
            if not isinstance(exc, asyncio.CancelledError):
                logger.exception("the MCP session manager stopped")
            raise
        finally:
            if self._running.get(loop) is not None and self._running[loop].task is task:
                del self._running[loop]

    def _forget_closed_loops(self) -> None:
        for loop in [loop for loop in self._running if loop.is_closed()]:
            del self._running[loop]

    async def aclose(self) -> None:
        """End this loop's session manager (its sessions and their handlers)."""
        running = self._running.get(asyncio.get_running_loop())
        if running is None:
            return
        running.stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await running.task
