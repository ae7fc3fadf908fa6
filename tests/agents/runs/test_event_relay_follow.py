"""An HTTP stream follows a run from the messages that carry frames as text: it decodes the frames it
takes, skips other runs' and those it has, fills a gap from the store, and still takes the frames of a
process of the previous version (dicts)."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from agents.chat_http.follow import run_frames
from agents.chat_http.sse import sse_frame
from agents.models import RunEvent
from agents.runs.events.relay import EVENT_MESSAGE_TYPE, events_message
from agents.runs.events.store import EventSink, conversation_group
from tests.agents.factories import RunFactory

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def _store(run, seq: int, event: str = "answer", content: str = "") -> dict:
    row = RunEvent.objects.create(
        conversation_id=run.conversation_id, run=run, seq=seq, event=event, data={"content": content}
    )
    return row.frame()


def _text(frame: dict) -> str:
    return json.dumps(frame, ensure_ascii=False, default=str)


async def test_a_followed_run_takes_text_frames_skips_others_fills_gaps_and_takes_old_dict_frames():
    run = await database_sync_to_async(RunFactory)(status="running")
    other = await database_sync_to_async(RunFactory)(conversation=run.conversation, status="done")
    group = conversation_group(run.conversation_id)
    layer = get_channel_layer()
    first = await _store(run, 1, content="one")
    stream = run_frames(conversation_id=run.conversation_id, run_id=run.pk, heartbeat=10)
    assert await anext(stream) == first  # replayed; the follower has joined the group
    second = await _store(run, 2, content="two")
    foreign = await _store(other, 3, content="not this run")
    await layer.group_send(group, events_message(other.pk, [3], [_text(foreign)]))
    await layer.group_send(group, events_message(run.pk, [1, 2], [_text(first), _text(second)]))
    assert await asyncio.wait_for(anext(stream), 5) == second
    # 4 and 5 stored, the message of 4 lost: 5 arrives first.
    fourth, fifth = await _store(run, 4, content="four"), await _store(run, 5, content="five")
    await layer.group_send(group, events_message(run.pk, [5], [_text(fifth)]))
    assert [await asyncio.wait_for(anext(stream), 5) for _ in range(2)] == [fourth, fifth]
    done = {"seq": 6, "run_id": str(run.pk), "event": "done", "data": {"answer": "five"}}
    await layer.group_send(group, {"type": EVENT_MESSAGE_TYPE, "frames": [done]})
    assert await asyncio.wait_for(anext(stream), 5) == done
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(stream), 5)


async def test_an_sse_frame_of_a_written_event_is_what_it_was_before():
    run = await database_sync_to_async(RunFactory)(status="running")
    stream = run_frames(conversation_id=run.conversation_id, run_id=run.pk, heartbeat=10)
    waiting = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.2)  # the follower joins the group and finds nothing stored
    sink = EventSink(conversation_id=run.conversation_id, run_id=run.pk, first_seq=1)
    data = {"status": "delta", "content": '订单 **7** "已发货"', "n": 1.5}
    sink.emit("answer", data)
    await sink.close()
    frame = await asyncio.wait_for(waiting, 5)
    expected = {"seq": 1, "run_id": str(run.pk), "event": "answer", "data": data}
    assert sse_frame(frame) == sse_frame(expected)
    await stream.aclose()
