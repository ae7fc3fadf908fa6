"""Follow one run's events: what the store holds after a position, then live events, in seq order,
each exactly once, until the run's ``done``.

The follower joins the conversation's channel-layer group before it reads the store, so nothing
published meanwhile is missed; frames it already has are skipped by seq, a gap is filled from the store.
At every heartbeat it also reads the store (a channel layer may drop messages). A run that is no longer
active (finished, cancelled, interrupted) ends the stream once its stored events are out: its status is
read before its events, and a run's end is recorded in the transaction that stores its ``done``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from agents.models import ACTIVE_RUN_STATUSES, RunEvent
from agents.runs import addressed
from agents.runs.events.relay import EVENT_MESSAGE_TYPE, message_relayed
from agents.runs.events.store import conversation_group

REPLAY_LIMIT = 5000


def heartbeat_seconds() -> float:
    """Seconds between heartbeats of an HTTP stream (``HTTP_CHAT_HEARTBEAT_SECONDS``, default 15)."""
    return float(getattr(settings, "HTTP_CHAT_HEARTBEAT_SECONDS", 15))


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Nothing happened for a heartbeat's time (the caller writes a keep-alive)."""

    type: Literal["heartbeat"] = "heartbeat"


HEARTBEAT = Heartbeat()
FollowItem = dict[str, Any] | Heartbeat


def _stored_after(run_id: uuid.UUID, after_seq: int) -> tuple[list[dict[str, Any]], bool]:
    """The run's stored frames after ``after_seq`` and whether the run was active before they were read."""
    # The caller's run: its entry point checked the run is theirs before following it.
    active = addressed.runs().filter(pk=run_id, status__in=ACTIVE_RUN_STATUSES).exists()
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq")[:REPLAY_LIMIT]
    return [row.frame() for row in rows], active


class _Position:
    def __init__(self, run_id: uuid.UUID, after_seq: int) -> None:
        self.run_id = str(run_id)
        self.last = after_seq
        self.ended = False

    def take(self, frame: dict[str, Any]) -> bool:
        """Whether ``frame`` is new for this follower (and remember it)."""
        seq = frame.get("seq")
        if frame.get("run_id") != self.run_id or not isinstance(seq, int) or seq <= self.last:
            return False
        self.last = seq
        if frame.get("event") == "done":
            self.ended = True
        return True


async def run_frames(
    *, conversation_id: uuid.UUID, run_id: uuid.UUID, after_seq: int = 0, heartbeat: float | None = None
) -> AsyncGenerator[FollowItem, None]:
    """The run's frames after ``after_seq`` (replayed, then live) and a :data:`HEARTBEAT` whenever
    nothing came for ``heartbeat`` seconds; ends after ``done`` or once an inactive run is replayed."""
    beat = heartbeat_seconds() if heartbeat is None else heartbeat
    position = _Position(run_id, after_seq)
    stored = database_sync_to_async(_stored_after)
    layer = get_channel_layer()
    group = conversation_group(conversation_id)
    channel = None
    if layer is not None:
        channel = await layer.new_channel("http-chat.")
        await layer.group_add(group, channel)
    try:

        async def catch_up() -> AsyncIterator[dict[str, Any]]:
            while True:
                frames, active = await stored(run_id, position.last)
                for frame in frames:
                    if position.take(frame):
                        yield frame
                        if position.ended:
                            return
                if len(frames) >= REPLAY_LIMIT:
                    continue
                if not active:
                    position.ended = True
                return

        async for frame in catch_up():
            yield frame
        while not position.ended:
            message = await _receive(layer, channel, beat)
            if message is None:
                yield HEARTBEAT
                async for frame in catch_up():
                    yield frame
                continue
            if message.get("type") != EVENT_MESSAGE_TYPE:
                continue
            for seq, frame_run, payload in message_relayed(message):
                if frame_run != position.run_id or not isinstance(seq, int) or seq <= position.last:
                    continue
                if seq > position.last + 1:  # the layer dropped something: fill from the store, in order
                    async for stored_frame in catch_up():
                        yield stored_frame
                    if position.ended:
                        return
                frame = payload if isinstance(payload, dict) else _decoded(payload)
                if position.take(frame):
                    yield frame
                if position.ended:
                    return
    finally:
        if layer is not None and channel is not None:
            with contextlib.suppress(Exception):
                await layer.group_discard(group, channel)


def _decoded(text: str) -> dict[str, Any]:
    """A relayed frame's dict (the stream re-encodes it as SSE, or reads it as OpenAI chunks)."""
    frame = json.loads(text)
    return frame if isinstance(frame, dict) else {}


async def _receive(layer: Any, channel: str | None, seconds: float) -> dict[str, Any] | None:
    """The next layer message, or ``None`` after ``seconds`` (sooner without a layer: then the store is
    polled)."""
    if layer is None or channel is None:
        await asyncio.sleep(min(seconds, 0.5))
        return None
    try:
        async with asyncio.timeout(seconds):
            return await layer.receive(channel)
    except TimeoutError:
        return None
