"""The persisted, fanned-out event stream of a conversation (DESIGN section 4).

Every event a run emits gets the next ``seq`` of its conversation, is written to ``RunEvent`` and only
then published to the conversation's channel-layer group, so a client that reconnects to any process
can replay from the database exactly what it missed and skip, by ``seq``, what it already has.

One :class:`EventSink` per run. Writes go through a single writer task that batches whatever queued up
while the previous write ran: the event loop never waits on the database, and a burst of answer deltas
costs one transaction instead of one per token.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import Max

from agents.models import RunEvent

logger = logging.getLogger(__name__)

EVENT_MESSAGE_TYPE = "run.event"


def conversation_group(conversation_id: uuid.UUID | str) -> str:
    """The channel-layer group every socket of a conversation joins."""
    return f"conv.{uuid.UUID(str(conversation_id)).hex}"


def run_group(run_id: uuid.UUID | str) -> str:
    """The channel-layer group that carries control messages (interrupt, cancel) to a run's process."""
    return f"run.{uuid.UUID(str(run_id)).hex}"


def last_seq_sync(conversation_id: uuid.UUID) -> int:
    return RunEvent.objects.filter(conversation_id=conversation_id).aggregate(m=Max("seq"))["m"] or 0


def events_after_sync(conversation_id: uuid.UUID, after_seq: int, limit: int = 5000) -> list[dict[str, Any]]:
    """Persisted frames of a conversation with ``seq > after_seq``, in order."""
    rows = RunEvent.objects.filter(conversation_id=conversation_id, seq__gt=after_seq).order_by("seq")[:limit]
    return [row.frame() for row in rows]


def _write_batch(rows: list[RunEvent]) -> None:
    with transaction.atomic():
        RunEvent.objects.bulk_create(rows)


class EventSink:
    """The ``on_event`` callback of one run: assigns seq, persists, then publishes, in order."""

    def __init__(self, *, conversation_id: uuid.UUID, run_id: uuid.UUID, first_seq: int) -> None:
        self.conversation_id = conversation_id
        self.run_id = run_id
        self._next_seq = first_seq
        self._queue: asyncio.Queue[RunEvent | None] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        self._group = conversation_group(conversation_id)
        self._layer = get_channel_layer()
        self.last_seq = first_seq - 1
        self.failed: BaseException | None = None

    @classmethod
    async def open(cls, *, conversation_id: uuid.UUID, run_id: uuid.UUID) -> EventSink:
        last = await database_sync_to_async(last_seq_sync)(conversation_id)
        return cls(conversation_id=conversation_id, run_id=run_id, first_seq=last + 1)

    async def __call__(self, event: Any) -> None:
        """Accept an engine ``Event`` (channel + data)."""
        self.emit(event.channel, event.data)

    def emit(self, channel: str, data: Mapping[str, Any]) -> int:
        """Queue one event; returns its seq. Never blocks."""
        seq = self._next_seq
        self._next_seq += 1
        self.last_seq = seq
        row = RunEvent(
            conversation_id=self.conversation_id, run_id=self.run_id, seq=seq, event=channel, data=dict(data)
        )
        self._queue.put_nowait(row)
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_loop(), name=f"events-{self.run_id}")
        return seq

    async def close(self) -> None:
        """Flush every queued event (persisted and published) and stop the writer."""
        if self._writer is None:
            return
        self._queue.put_nowait(None)
        try:
            await self._writer
        finally:
            self._writer = None

    async def _write_loop(self) -> None:
        write = database_sync_to_async(_write_batch)
        closing = False
        while not closing:
            batch: list[RunEvent] = []
            item = await self._queue.get()
            while True:
                if item is None:
                    closing = True
                    break
                batch.append(item)
                if self._queue.empty():
                    break
                item = self._queue.get_nowait()
            if not batch:
                continue
            try:
                await write(batch)
            except Exception as exc:  # the database is down: log, keep publishing so live clients see it
                self.failed = exc
                logger.exception("could not persist %d events of run %s", len(batch), self.run_id)
            for row in batch:
                await self._publish(row.frame())

    async def _publish(self, frame: dict[str, Any]) -> None:
        if self._layer is None:
            return
        try:
            await self._layer.group_send(self._group, {"type": EVENT_MESSAGE_TYPE, "frame": frame})
        except Exception:
            logger.exception("could not publish event %s of run %s", frame.get("seq"), self.run_id)
