"""Publishing a batch of group messages: every message reaches its group, in order per group, on the
in-memory layer and, pipelined, on the Redis Pub/Sub layer."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest
from channels.layers import InMemoryChannelLayer

from agents.runs.events.fanout import group_send_many, pipelined_sender

# The cache, channel layer or broker the settings name: CI's second pass (PostgreSQL + Redis) runs it too.
pytestmark = pytest.mark.services

REDIS_URL = os.environ.get("REDIS_URL", "")


async def _received(layer, channel: str, count: int) -> list[int]:
    got = []
    for _ in range(count):
        message = await asyncio.wait_for(layer.receive(channel), 5)
        got.append(message["n"])
    return got


async def _send_two_groups(layer) -> tuple[list[int], list[int]]:
    first, second = f"conv.{uuid.uuid4().hex}", f"conv.{uuid.uuid4().hex}"
    a, b = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(first, a)
    await layer.group_add(second, b)
    messages = [(first if n % 2 else second, {"type": "run.event", "n": n}) for n in range(10)]
    await group_send_many(layer, messages)
    return await _received(layer, a, 5), await _received(layer, b, 5)


async def test_each_message_of_a_batch_reaches_its_group_in_order_on_the_in_memory_layer():
    layer = InMemoryChannelLayer()
    assert pipelined_sender(layer) is None
    assert await _send_two_groups(layer) == ([1, 3, 5, 7, 9], [0, 2, 4, 6, 8])


@pytest.mark.skipif(not REDIS_URL, reason="needs the Redis server (REDIS_URL)")
async def test_a_batch_goes_out_pipelined_on_the_redis_pub_sub_layer_in_order():
    from channels_redis.pubsub import RedisPubSubChannelLayer

    layer = RedisPubSubChannelLayer(hosts=[REDIS_URL], prefix=f"test-{uuid.uuid4().hex[:8]}")
    try:
        # the pipelined path is there (a channels-redis upgrade that removes it fails here)
        assert pipelined_sender(layer) is not None
        assert await _send_two_groups(layer) == ([1, 3, 5, 7, 9], [0, 2, 4, 6, 8])
    finally:
        await layer.flush()
