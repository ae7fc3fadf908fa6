"""The event writer shared by every run of a process (group commit): runs that stream at the same time
share transactions, and one run's trouble never costs another run its events."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from agents.models import RunEvent
from agents.runs.events import store as events_store
from agents.runs.events.store import EventSink, Fence, conversation_group
from tests.agents.factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)


async def _running_run(owner: str):
    return await database_sync_to_async(RunFactory)(status="running", lease_owner=owner)


async def _listen(conversation_id) -> str:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(conversation_group(conversation_id), channel)
    return channel


async def _published_seqs(channel: str) -> list[int]:
    layer = get_channel_layer()
    seqs: list[int] = []
    while True:
        try:
            message = await asyncio.wait_for(layer.receive(channel), 0.3)
        except TimeoutError:
            return seqs
        seqs += message["seqs"]


async def _stored_seqs(run) -> list[int]:
    rows = RunEvent.objects.filter(run_id=run.pk).order_by("seq").values_list("seq", flat=True)
    return await database_sync_to_async(list)(rows)


def _stream(sink: EventSink, count: int) -> None:
    for i in range(count):
        sink.emit("answer", {"delta": f"part {i} "})


async def test_runs_streaming_at_the_same_time_are_written_together_in_order(monkeypatch):
    runs = [await _running_run(f"here#{i}") for i in range(3)]
    together: list[int] = []
    write = events_store._write_batches

    def counting(parts: list[Any]) -> None:
        together.append(len(parts))
        write(parts)

    monkeypatch.setattr(events_store, "_write_batches", counting)
    channels = [await _listen(run.conversation_id) for run in runs]
    sinks = [
        EventSink(
            conversation_id=run.conversation_id, run_id=run.pk, first_seq=1, fence=Fence(f"here#{i}", 15)
        )
        for i, run in enumerate(runs)
    ]
    for sink in sinks:
        _stream(sink, 5)
    await asyncio.gather(*(sink.close() for sink in sinks))

    assert together and together[0] == 3  # one transaction for the three runs' batches
    for run, channel, sink in zip(runs, channels, sinks, strict=True):
        assert await _stored_seqs(run) == [1, 2, 3, 4, 5]
        assert await _published_seqs(channel) == [1, 2, 3, 4, 5]
        assert not sink.lease_lost and sink.failed is None


async def test_a_run_that_lost_its_lease_costs_the_runs_written_with_it_nothing():
    kept, lost_run = await _running_run("here#1"), await _running_run("elsewhere#9")
    kept_channel, lost_channel = await _listen(kept.conversation_id), await _listen(lost_run.conversation_id)
    lost: list[bool] = []
    kept_sink = EventSink(
        conversation_id=kept.conversation_id, run_id=kept.pk, first_seq=1, fence=Fence("here#1", 15)
    )
    lost_sink = EventSink(
        conversation_id=lost_run.conversation_id,
        run_id=lost_run.pk,
        first_seq=1,
        fence=Fence("here#2", 15),
        on_lease_lost=lambda: lost.append(True),
    )
    _stream(kept_sink, 3)
    _stream(lost_sink, 3)
    await asyncio.gather(kept_sink.close(), lost_sink.close())

    assert await _stored_seqs(kept) == [1, 2, 3]
    assert await _published_seqs(kept_channel) == [1, 2, 3]
    assert lost == [True] and lost_sink.lease_lost and not kept_sink.lease_lost
    assert await _stored_seqs(lost_run) == []
    assert await _published_seqs(lost_channel) == []


async def test_a_run_whose_rows_the_database_refuses_does_not_lose_the_other_runs_events():
    healthy, broken = await _running_run("here#1"), await _running_run("here#2")
    # another writer already took seq 1 of the broken run's conversation: its batch violates uniqueness
    await database_sync_to_async(RunEvent.objects.create)(
        conversation_id=broken.conversation_id, run_id=broken.pk, seq=1, event="step", data={}
    )
    broken_channel = await _listen(broken.conversation_id)
    healthy_sink = EventSink(
        conversation_id=healthy.conversation_id, run_id=healthy.pk, first_seq=1, fence=Fence("here#1", 15)
    )
    broken_sink = EventSink(
        conversation_id=broken.conversation_id, run_id=broken.pk, first_seq=1, fence=Fence("here#2", 15)
    )
    _stream(healthy_sink, 4)
    _stream(broken_sink, 2)
    await asyncio.gather(healthy_sink.close(), broken_sink.close())

    assert await _stored_seqs(healthy) == [1, 2, 3, 4] and healthy_sink.failed is None
    assert broken_sink.failed is not None
    # live clients still see what could not be stored (a reconnecting one would find the gap)
    assert await _published_seqs(broken_channel) == [1, 2]


async def test_answer_pieces_streamed_during_a_write_are_stored_and_sent_as_one_delta(monkeypatch):
    run = await _running_run("here#1")
    channel = await _listen(run.conversation_id)
    write = events_store._write_batch

    def slow_write(*args: Any) -> None:
        time.sleep(0.2)  # a busy database: the pieces below arrive while this write is under way
        write(*args)

    monkeypatch.setattr(events_store, "_write_batch", slow_write)
    sink = EventSink(
        conversation_id=run.conversation_id, run_id=run.pk, first_seq=1, fence=Fence("here#1", 15)
    )
    sink.emit("answer", {"status": "start"})
    await asyncio.sleep(0.05)  # the writer has taken the first batch
    seqs = [
        sink.emit("answer", {"status": "delta", "content": piece}) for piece in ("Order ", "7 ", "shipped")
    ]
    sink.emit("step", {"type": "answer", "status": "start"})
    seqs.append(sink.emit("answer", {"status": "delta", "content": "."}))
    await sink.close()

    assert seqs == [2, 2, 2, 4]
    rows = RunEvent.objects.filter(run_id=run.pk).order_by("seq").values_list("seq", "event", "data")
    stored = await database_sync_to_async(list)(rows)
    assert stored == [
        (1, "answer", {"status": "start"}),
        (2, "answer", {"status": "delta", "content": "Order 7 shipped"}),
        (3, "step", {"type": "answer", "status": "start"}),
        (4, "answer", {"status": "delta", "content": "."}),
    ]
    assert await _published_seqs(channel) == [1, 2, 3, 4]


async def test_a_batch_larger_than_the_databases_parameter_limit_is_stored_whole_with_its_data():
    run = await _running_run("here#big")
    sink = EventSink(
        conversation_id=run.conversation_id, run_id=run.pk, first_seq=1, fence=Fence("here#big", 15)
    )
    channel = await _listen(run.conversation_id)
    # Steps, not deltas: deltas waiting together would be joined into one row.
    for i in range(1200):
        sink.emit("step", {"index": i, "text": f"步骤 {i}", "nested": {"ok": i % 2 == 0}})
    await sink.close()

    rows = RunEvent.objects.filter(run_id=run.pk).order_by("seq")
    stored = await database_sync_to_async(list)(rows.values_list("seq", "event", "data"))
    assert [seq for seq, _event, _data in stored] == list(range(1, 1201))
    assert stored[1199] == (1200, "step", {"index": 1199, "text": "步骤 1199", "nested": {"ok": False}})
    assert await _published_seqs(channel) == list(range(1, 1201))
