"""The Redis Pub/Sub layer with light per-channel inboxes (``platform_core.wiring.channel_layer``)."""

from __future__ import annotations

import asyncio
import os
import tracemalloc
import uuid

import pytest

from platform_core.wiring.channel_layer import Inbox, LeanRedisPubSubChannelLayer

# The cache, channel layer or broker the settings name: CI's second pass (PostgreSQL + Redis) runs it too.
pytestmark = pytest.mark.services

REDIS_URL = os.environ.get("REDIS_URL")


async def test_an_inbox_hands_out_items_in_the_order_they_were_put():
    inbox = Inbox()
    for n in range(5):
        inbox.put_nowait(n)
    assert [await inbox.get() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert inbox.empty() and inbox.qsize() == 0


async def test_a_waiting_get_returns_what_is_put_later():
    inbox = Inbox()
    getter = asyncio.ensure_future(inbox.get())
    await asyncio.sleep(0)
    assert not getter.done()
    inbox.put_nowait("hello")
    assert await asyncio.wait_for(getter, 1) == "hello"


async def test_a_cancelled_get_loses_no_item_and_hands_the_wake_up_on():
    inbox = Inbox()
    first = asyncio.ensure_future(inbox.get())
    second = asyncio.ensure_future(inbox.get())
    await asyncio.sleep(0)
    inbox.put_nowait("only")  # wakes the first getter, which is cancelled before it runs
    first.cancel()
    assert await asyncio.wait_for(second, 1) == "only"
    assert first.cancelled()


def test_an_idle_inbox_is_a_fraction_of_an_asyncio_queue():
    def size(make):  # type: ignore[no-untyped-def]
        tracemalloc.start()
        try:
            kept = [make() for _ in range(200)]
            used = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert len(kept) == 200
        return used / 200

    assert size(Inbox) < size(asyncio.Queue) / 10


@pytest.mark.skipif(not REDIS_URL, reason="needs the Redis server (REDIS_URL)")
async def test_channels_and_groups_deliver_on_the_lean_layer():
    layer = LeanRedisPubSubChannelLayer(hosts=[REDIS_URL], prefix=f"test-{uuid.uuid4().hex[:8]}")
    try:
        a, b = await layer.new_channel(), await layer.new_channel()
        await layer.group_add("g", a)
        await layer.group_add("g", b)
        await asyncio.sleep(0.1)  # the subscriptions reach Redis
        await layer.send(a, {"type": "direct", "n": 1})
        await layer.group_send("g", {"type": "grouped", "n": 2})
        got_a = [await asyncio.wait_for(layer.receive(a), 5) for _ in range(2)]
        got_b = await asyncio.wait_for(layer.receive(b), 5)
        assert [m["type"] for m in got_a] == ["direct", "grouped"]
        assert got_b["n"] == 2
    finally:
        await layer.flush()
