"""Answer deltas coalesced per window (issue #22): a run sends at most one answer delta per window; the
stream keeps DESIGN section 4's frames and seq: the same text, in order, nothing lost or duplicated, the
published frames exactly the stored rows."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from agents.models import RunEvent
from agents.runs.events.store import EventSink, Fence, conversation_group
from tests.agents.factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def _sink(window_ms: int, settings: Any) -> tuple[Any, EventSink, str]:
    settings.ANSWER_DELTA_WINDOW_MS = window_ms
    run = await database_sync_to_async(RunFactory)(status="running", lease_owner="here#1")
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(run.conversation_id), channel)
    sink = EventSink(
        conversation_id=run.conversation_id, run_id=run.pk, first_seq=1, fence=Fence("here#1", 15)
    )
    return run, sink, channel


async def _published(channel: str) -> list[dict[str, Any]]:
    layer = get_channel_layer()
    frames: list[dict[str, Any]] = []
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 0.3)
        except TimeoutError:
            return frames
        frames += [json.loads(text) for text in message["texts"]]


async def _stored(run: Any) -> list[dict[str, Any]]:
    rows = RunEvent.objects.filter(run_id=run.pk).order_by("seq")
    return await database_sync_to_async(lambda: [row.frame() for row in rows])()


async def _stream(sink: EventSink, pieces: int, gap: float) -> None:
    sink.emit("answer", {"status": "start"})
    for i in range(pieces):
        sink.emit("answer", {"status": "delta", "content": f"<{i}>"})
        await asyncio.sleep(gap)
    sink.emit("answer", {"status": "done", "content": "".join(f"<{i}>" for i in range(pieces))})


def _text(frames: list[dict[str, Any]]) -> str:
    return "".join(f["data"].get("content", "") for f in frames if f["data"].get("status") == "delta")


async def test_pieces_faster_than_the_window_travel_as_fewer_deltas_with_the_same_text_in_order(settings):
    run, sink, channel = await _sink(100, settings)
    await _stream(sink, 30, 0.005)
    await sink.close()
    stored, published = await _stored(run), await _published(channel)
    assert published == stored  # what the sockets got is what a reconnecting client replays
    assert [f["seq"] for f in stored] == list(range(1, len(stored) + 1))
    assert _text(stored) == "".join(f"<{i}>" for i in range(30))
    deltas = [f for f in stored if f["data"].get("status") == "delta"]
    assert len(deltas) < 10  # about one per 100 ms over ~150 ms of streaming, not 30
    assert [f["data"]["status"] for f in stored][-1] == "done"


async def test_an_event_emitted_while_a_delta_is_held_follows_it_and_close_sends_a_held_delta(settings):
    run, sink, channel = await _sink(10_000, settings)  # a window that never ends by itself here
    sink.emit("answer", {"status": "delta", "content": "a"})
    await asyncio.sleep(0.2)  # written and published: nothing queued that "b" could join
    sink.emit("answer", {"status": "delta", "content": "b"})  # held: within the window of "a"
    sink.emit("answer", {"status": "delta", "content": "c"})  # joins "b"
    sink.emit("step", {"type": "thinking", "status": "start"})  # releases "bc" before it
    sink.emit("answer", {"status": "delta", "content": "d"})  # held again
    await sink.close()  # sends it
    stored = await _stored(run)
    assert [(f["seq"], f["event"], f["data"].get("content")) for f in stored] == [
        (1, "answer", "a"),
        (2, "answer", "bc"),
        (3, "step", None),
        (4, "answer", "d"),
    ]
    assert await _published(channel) == stored


async def test_with_the_window_off_every_piece_written_to_an_idle_writer_is_its_own_delta(settings):
    run, sink, channel = await _sink(0, settings)
    await _stream(sink, 5, 0.05)
    await sink.close()
    deltas = [f for f in await _stored(run) if f["data"].get("status") == "delta"]
    assert [d["data"]["content"] for d in deltas] == [f"<{i}>" for i in range(5)]
