"""Hostile websocket frames get an ``error`` frame and the socket stays usable (DESIGN section 4).

Each case sends a bad frame, expects one ``error`` frame, then proves the socket still works: a normal
message starts a run whose events reach this socket. Unknown websocket paths are refused cleanly.
"""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from agents.runs.manager import run_manager
from agents.ws_frames import MAX_FRAME_BYTES
from platform_core.asgi import application
from tests.agents.ws_helpers import TIMEOUT, bearer_for, connect, frames_until_done, next_frame
from tests.fakes.openai_server import text

pytestmark = pytest.mark.django_db(transaction=True)

DEPTH = 40_000  # far past Python's recursion limit; every frame below stays inside the 256 KB limit

NESTED_FRAMES = {
    "nested lists": "[" * DEPTH + "]" * DEPTH,
    "nested objects": '{"a":' * DEPTH + "1" + "}" * DEPTH,
    "nested content": '{"type": "message", "content": ' + "[" * DEPTH + "]" * DEPTH + "}",
    "nested after_seq": '{"type": "resume", "after_seq": ' + '{"a":' * DEPTH + "1" + "}" * DEPTH + "}",
}


def test_the_nested_frames_are_within_the_size_limit():
    assert all(len(frame.encode()) <= MAX_FRAME_BYTES for frame in NESTED_FRAMES.values())


BAD_AFTER_SEQ = [
    10**18,
    10**18 + 1,
    2**63 - 1,
    2**63,
    2**64,
    10**30,
    -1,
    -(2**63) - 1,
    1.5,
    1e308,
    "5",
    True,
    None,
    [],
    {},
]


async def _socket(chat):
    user, conversation = await database_sync_to_async(chat)()
    ws, connected, code = await connect(conversation.pk, await bearer_for(user))
    assert connected and code is None
    return ws


async def _still_answers(ws, scripted_llm) -> None:
    """A normal message after the bad frame runs, and its events reach this socket."""
    scripted_llm.script(text("Still here."))
    await ws.send_json_to({"type": "message", "content": "Are you there?"})
    frames = await frames_until_done(ws)
    assert frames[-1]["data"]["answer"] == "Still here."
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


async def _expect_error(ws) -> dict:
    frame = await next_frame(ws)
    assert frame["event"] == "error" and frame["seq"] is None, frame
    assert frame["data"]["code"] and frame["data"]["message"]
    return frame


@pytest.mark.parametrize("name", list(NESTED_FRAMES))
async def test_a_deeply_nested_frame_is_refused_and_the_socket_stays_usable(chat, scripted_llm, name):
    ws = await _socket(chat)
    await ws.send_to(text_data=NESTED_FRAMES[name])
    error = await _expect_error(ws)
    assert error["data"]["code"] == "bad_frame"
    await _still_answers(ws, scripted_llm)
    await ws.disconnect()


@pytest.mark.parametrize("after_seq", BAD_AFTER_SEQ, ids=repr)
async def test_resume_with_an_impossible_after_seq_is_refused_and_the_socket_stays_usable(
    chat, scripted_llm, after_seq
):
    ws = await _socket(chat)
    await ws.send_to(text_data=json.dumps({"type": "resume", "after_seq": after_seq}))
    error = await _expect_error(ws)
    assert error["data"]["code"] == "bad_frame"
    await _still_answers(ws, scripted_llm)
    await ws.disconnect()


async def test_resume_at_the_newest_event_is_accepted_without_an_error(chat, scripted_llm):
    ws = await _socket(chat)
    await _still_answers(ws, scripted_llm)
    newest = None
    await ws.send_json_to({"type": "resume", "after_seq": 0})
    while True:
        frame = await next_frame(ws)
        newest = frame["seq"]
        if frame["event"] == "done":
            break
    await ws.send_json_to({"type": "resume", "after_seq": newest})
    assert await ws.receive_nothing(timeout=0.3)
    await ws.disconnect()


UNKNOWN_PATHS = ["/ws/nowhere/", "/ws/conversations/", "/ws/conversations/x/y/", "/", "/api/v1/orgs/"]


@pytest.mark.parametrize("path", UNKNOWN_PATHS)
async def test_an_unknown_websocket_path_is_closed_with_4404(path):
    ws = WebsocketCommunicator(application, path)
    connected, code = await ws.connect(timeout=TIMEOUT)
    if connected:
        closed = await ws.receive_output(timeout=TIMEOUT)
        assert closed == {"type": "websocket.close", "code": 4404}
    else:
        assert code == 4404
    await ws.disconnect()
