"""Publishing many channel-layer group messages in one go.

channels-redis's Pub/Sub layer publishes one message per Redis round trip, one after another (every
publish takes its shard's lock). The event publisher has one message per streaming run each time a write
lands: with 200 streaming runs in a process that queue, not the database, decided the event latency
(benchmarks/README.md). So :func:`group_send_many` sends a batch as one pipelined round trip per Redis
shard, in order. That uses channels-redis 4's shard client (``_get_layer``, ``_get_shard``,
``_get_group_channel_name``, ``_ensure_redis``, ``_redis``): for any other layer (the in-memory layer of the
embedded defaults) or a channels-redis whose internals differ it sends one ``group_send`` per message.
tests/agents/test_fanout.py fails if a channels-redis upgrade takes the pipelined path away.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

GroupMessage = tuple[str, dict[str, Any]]


async def group_send_many(layer: Any, messages: Sequence[GroupMessage]) -> None:
    """Send each ``(group, message)`` to its group; messages to one group keep their order."""
    if not messages:
        return
    pipelined = pipelined_sender(layer)
    if pipelined is None:
        for group, message in messages:
            await layer.group_send(group, message)
        return
    await pipelined(messages)


def pipelined_sender(layer: Any) -> Callable[[Sequence[GroupMessage]], Awaitable[None]] | None:
    """The pipelined sender for a channels-redis Pub/Sub layer, or ``None`` for any other layer."""
    get_layer = getattr(layer, "_get_layer", None)
    serialize = getattr(layer, "serialize", None)
    if get_layer is None or serialize is None:
        return None
    try:
        loop_layer = get_layer()
    except Exception:
        return None
    needed = ("_get_shard", "_get_group_channel_name")
    if not all(hasattr(loop_layer, name) for name in needed):
        return None

    async def send(messages: Sequence[GroupMessage]) -> None:
        by_shard: dict[int, tuple[Any, list[tuple[str, bytes]]]] = {}
        for group, message in messages:
            channel = loop_layer._get_group_channel_name(group)
            shard = loop_layer._get_shard(channel)
            by_shard.setdefault(id(shard), (shard, []))[1].append((channel, serialize(message)))
        for shard, publishes in by_shard.values():
            shard._ensure_redis()
            pipe = shard._redis.pipeline(transaction=False)
            for channel, payload in publishes:
                pipe.publish(channel, payload)
            await pipe.execute()

    shard = loop_layer._get_shard(loop_layer._get_group_channel_name("probe"))
    if not (hasattr(shard, "_ensure_redis") and hasattr(shard, "_redis")):
        return None
    return send
