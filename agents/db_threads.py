"""Database threads of their own for the work of runs, beside the process's shared one.

Channels' ``database_sync_to_async`` runs every call of the process on ONE thread, one after the other.
Sockets use it for their handshake (the Bearer token, the conversation) and their messages; if runs used
it too, a burst of runs starting at once (their leases, agents, tools and hooks) would queue handshakes
behind it for seconds, past daphne's handshake timeout. So the event writer and the start of each run
have threads of their own.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from django.db import close_old_connections

T = TypeVar("T")


class DatabaseThreads:
    """A small pool of threads for sync database work, each call with a fresh connection state
    (as ``database_sync_to_async`` does) and the caller's context (language, tool-call variables)."""

    def __init__(self, name: str, workers: int = 1) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    async def run(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``function(*args, **kwargs)`` in one of the pool's threads."""
        call = functools.partial(_with_connection, function, args, kwargs)
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._executor, context.run, call)


def _with_connection(function: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    close_old_connections()
    try:
        return function(*args, **kwargs)
    finally:
        close_old_connections()


# The event writer: one thread, so batches are written in order.
writer_thread = DatabaseThreads("event-writer")
# The start of runs (lease, stream, agent, tools, hooks): two, so one slow start does not hold the rest.
run_start_threads = DatabaseThreads("run-start", workers=2)
