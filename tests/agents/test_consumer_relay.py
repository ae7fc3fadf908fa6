"""The socket relays an event as the text the event writer encoded once: byte for byte the frame it used
to encode itself, not encoded again; gaps are still filled from the store, nothing is sent twice, and
messages of a process of the previous version (frames as dicts) are still relayed."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from agents.models import RunEvent
from agents.runs.events.relay import EVENT_MESSAGE_TYPE, events_message
from agents.runs.events.store import EventSink, conversation_group
from platform_core.models import Role
from tests.agents.factories import ConversationFactory, RunFactory
from tests.agents.ws_helpers import TIMEOUT, bearer_for, connect
from tests.factories import OrganizationFactory, member_of

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "sk-erp-live-7f3a9c2e"


@database_sync_to_async
def _world():
    org = OrganizationFactory(slug="acme")
    user = member_of(org, Role.MEMBER, username="mia")
    conversation = ConversationFactory(organization=org, user=user)
    run = RunFactory(conversation=conversation, status="running")
    return user, conversation, run


@database_sync_to_async
def _store(run, seq: int, data: dict) -> dict:
    row = RunEvent.objects.create(
        conversation_id=run.conversation_id, run=run, seq=seq, event="answer", data=data
    )
    return row.frame()


async def _socket(conversation, user, after_seq: int = 0):
    ws, connected, code = await connect(conversation.pk, await bearer_for(user))
    assert connected and code is None
    await ws.send_json_to({"type": "resume", "after_seq": after_seq})
    if after_seq == 0 and not await database_sync_to_async(RunEvent.objects.exists)():
        assert await ws.receive_nothing(timeout=0.3)  # nothing to replay: let the resume land first
    return ws


async def _texts(ws, count: int) -> list[str]:
    return [(await ws.receive_output(timeout=TIMEOUT))["text"] for _ in range(count)]


async def _publish(conversation, message: dict) -> None:
    await get_channel_layer().group_send(conversation_group(conversation.pk), message)


def _encoded_before(run, seq: int, event: str, data: dict) -> str:
    frame = {"seq": seq, "run_id": str(run.pk), "event": event, "data": data}
    return json.dumps(frame, ensure_ascii=False, default=str)


async def test_a_relayed_frame_is_byte_for_byte_the_frame_encoded_before_and_holds_what_is_stored():
    user, conversation, run = await _world()
    ws = await _socket(conversation, user)
    sink = EventSink(conversation_id=conversation.pk, run_id=run.pk, first_seq=1, secrets=[SECRET])
    emitted = [
        ("step", {"type": "iteration", "status": "start", "n": 1, "elapsed": 0.125}),
        (
            "approval",
            {"status": "pending", "tool_name": "erp__pay", "tool_args": {"token": SECRET, "qty": 2}},
        ),
        ("answer", {"status": "delta", "content": '订单 **7** 已发货 ✓ "quoted"\n'}),
        ("answer", {"status": "done", "content": '订单 **7** 已发货 ✓ "quoted"\n'}),
    ]
    for channel, data in emitted:
        sink.emit(channel, data)
    await sink.close()
    texts = await _texts(ws, len(emitted))
    redacted = {"status": "pending", "tool_name": "erp__pay", "tool_args": {"token": "[redacted]", "qty": 2}}
    expected = [(c, redacted if c == "approval" else d) for c, d in emitted]
    assert texts == [_encoded_before(run, seq, c, d) for seq, (c, d) in enumerate(expected, start=1)]
    assert SECRET not in "".join(texts)
    stored = await database_sync_to_async(lambda: [r.frame() for r in RunEvent.objects.order_by("seq")])()
    assert [json.loads(text) for text in texts] == stored
    await ws.disconnect()


async def test_the_socket_sends_the_published_text_as_it_is_without_encoding_it_again():
    user, conversation, run = await _world()
    ws = await _socket(conversation, user)
    # Spacing no json.dumps makes: only the text as it came can reach the client.
    text = f'{{"seq":1,  "run_id":"{run.pk}","event":"answer","data":{{"content":"as is"}}}}'
    await _publish(conversation, events_message(run.pk, [1], [text]))
    assert await _texts(ws, 1) == [text]
    await ws.disconnect()


async def test_a_gap_is_filled_from_the_store_in_order_and_nothing_is_sent_twice():
    user, conversation, run = await _world()
    first = await _store(run, 1, {"content": "one"})
    ws = await _socket(conversation, user)
    assert [json.loads(t) for t in await _texts(ws, 1)] == [first]
    # Seqs 2 and 3 were stored, but the message of 2 was lost: 3 arrives first.
    second, third = await _store(run, 2, {"content": "two"}), await _store(run, 3, {"content": "three"})
    live = json.dumps(third, ensure_ascii=False)
    await _publish(conversation, events_message(run.pk, [3], [live]))
    assert [json.loads(t) for t in await _texts(ws, 2)] == [second, third]
    await _publish(conversation, events_message(run.pk, [2, 3], [json.dumps(second), live]))
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


async def test_frames_published_as_dicts_by_the_previous_version_are_still_relayed():
    user, conversation, run = await _world()
    ws = await _socket(conversation, user)
    one = {"seq": 1, "run_id": str(run.pk), "event": "answer", "data": {"content": "订单"}}
    two = {"seq": 2, "run_id": str(run.pk), "event": "done", "data": {"answer": "订单"}}
    await _publish(conversation, {"type": EVENT_MESSAGE_TYPE, "frames": [one]})
    await _publish(conversation, {"type": EVENT_MESSAGE_TYPE, "frame": two})
    assert await _texts(ws, 2) == [json.dumps(f, ensure_ascii=False, default=str) for f in (one, two)]
    await ws.disconnect()
