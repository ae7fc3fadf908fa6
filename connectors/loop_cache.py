"""Objects that belong to one event loop (HTTP clients, connection pools, asyncio locks).

Sync Django code reaches the adapters through ``async_to_sync``, which may run each call in a new
loop; a client or pool created in one loop must not be used from another, so each loop gets its own.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """One ``factory()`` result per running event loop, dropped when the loop is garbage collected."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self) -> T:
        """The object of the running loop, created on first use."""
        loop = asyncio.get_running_loop()
        with self._lock:
            value = self._by_loop.get(loop)
            if value is None:
                value = self._factory()
                self._by_loop[loop] = value
            return value

    def pop(self) -> T | None:
        """Forget the running loop's object and return it (for closing)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            return self._by_loop.pop(loop, None)
