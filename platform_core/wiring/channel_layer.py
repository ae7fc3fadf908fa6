"""Channels' Redis Pub/Sub layer with a lighter inbox per channel.

Each consumer gets a channel of its own, and channels-redis keeps an ``asyncio.Queue`` for it: four
deques (items, getters, putters, and its ``join`` event's waiters), about 3 KiB, for a socket that is
idle most of its life. The layer only ever calls ``put_nowait`` and ``get`` on it, so :class:`Inbox` does
those two with nothing allocated while it is empty and nobody waits. Everything else is channels-redis's.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer, RedisPubSubLoopLayer
from channels_redis.utils import _wrap_close


class Inbox:
    """An unbounded FIFO for one channel: ``put_nowait`` and ``await get()``, as ``asyncio.Queue``."""

    __slots__ = ("_items", "_waiters")

    def __init__(self) -> None:
        self._items: deque[Any] | None = None
        self._waiters: list[asyncio.Future[None]] | None = None

    def qsize(self) -> int:
        return len(self._items) if self._items else 0

    def empty(self) -> bool:
        return not self._items

    def put_nowait(self, item: Any) -> None:
        if self._items is None:
            self._items = deque()
        self._items.append(item)
        self._wake_one()

    async def get(self) -> Any:
        while not self._items:
            waiter = asyncio.get_running_loop().create_future()
            if self._waiters is None:
                self._waiters = []
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                # Cancelled after a put woke it: hand the wake-up on, as asyncio.Queue does.
                if self._items and waiter.done() and not waiter.cancelled():
                    self._wake_one()
                raise
            finally:
                self._forget(waiter)
        item = self._items.popleft()
        if not self._items:
            self._items = None
        return item

    def _wake_one(self) -> None:
        for waiter in self._waiters or ():
            if not waiter.done():
                waiter.set_result(None)
                return

    def _forget(self, waiter: asyncio.Future[None]) -> None:
        if self._waiters is not None:
            self._waiters.remove(waiter)
            if not self._waiters:
                self._waiters = None


class _LoopLayer(RedisPubSubLoopLayer):
    async def _subscribe_to_channel(self, channel: str) -> None:
        self.channels[channel] = Inbox()
        shard = self._get_shard(channel)
        await shard.subscribe(channel)


class LeanRedisPubSubChannelLayer(RedisPubSubChannelLayer):
    """``channels_redis.pubsub.RedisPubSubChannelLayer`` whose channels use :class:`Inbox`."""

    def _get_layer(self) -> RedisPubSubLoopLayer:
        loop = asyncio.get_running_loop()
        try:
            return self._layers[loop]
        except KeyError:
            layer = _LoopLayer(*self._args, **self._kwargs, channel_layer=self)
            self._layers[loop] = layer
            _wrap_close(self, loop)
            return layer
