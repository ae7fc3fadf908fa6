"""A cancel reaches the chat as a stored, published ``done`` (cancelled) whenever it lands.

The browser's Stop button sends ``{"type": "cancel"}`` right after the message on a fast click, so the
cancel can land before the run has opened its event stream, while the engine is being built, or while
the model call hangs. Each moment must end the run with exactly one ``done`` whose ``cancelled`` is
true, stored (a reload replays it) and sent to the socket, and must leave the conversation free.
"""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from agents.models import Run, RunEvent, RunStatus
from agents.runs.manager import run_manager
from tests.agents.ws_helpers import bearer_for, connect, frames_until_done
from tests.fakes.openai_server import hang, text

pytestmark = pytest.mark.django_db(transaction=True)


async def _with_the_message(ws, scripted_llm) -> None:
    """The cancel right behind the message: the run's task has just started (its stream is not open)."""


async def _twice_with_the_message(ws, scripted_llm) -> None:
    """Two cancels before the stream is open (a second tab, a double click)."""
    await ws.send_json_to({"type": "cancel"})


async def _while_the_model_call_hangs(ws, scripted_llm) -> None:
    await scripted_llm.until_received(1)


# Moments at which the cancel lands (extend the list with new ones).
CANCEL_MOMENTS = [
    pytest.param(_with_the_message, id="with-the-message"),
    pytest.param(_twice_with_the_message, id="twice-with-the-message"),
    pytest.param(_while_the_model_call_hangs, id="while-the-model-call-hangs"),
]


@pytest.fixture
def conversation_and_token(chat):
    async def make():
        user, conversation = await database_sync_to_async(chat)()
        return conversation, await bearer_for(user)

    return make


@pytest.mark.parametrize("moment", CANCEL_MOMENTS)
async def test_a_cancel_at_any_moment_ends_the_run_with_a_stored_and_sent_cancelled_done(
    conversation_and_token, scripted_llm, moment
):
    # Given a model that hangs, and a socket positioned at the start of the conversation
    scripted_llm.script(hang(20))
    conversation, token = await conversation_and_token()
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "resume", "after_seq": 0})

    # When the user asks and stops at that moment
    await ws.send_json_to({"type": "message", "content": "Summarise every order since 2019"})
    await moment(ws, scripted_llm)
    await ws.send_json_to({"type": "cancel"})

    # Then the socket gets one cancelled done, which is stored, and the run is recorded cancelled
    frames = await frames_until_done(ws)
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)
    done = frames[-1]
    assert done["data"]["cancelled"] is True
    stored = [
        (e.seq, e.event)
        async for e in RunEvent.objects.filter(conversation_id=conversation.pk).order_by("seq")
    ]
    assert stored[-1] == (done["seq"], "done")
    assert [channel for _, channel in stored].count("done") == 1
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert run.status == RunStatus.CANCELLED

    # And the conversation is free: the next question starts a new run
    scripted_llm.reset()
    scripted_llm.script(text("Hi."), text("Hello again."))
    await ws.send_json_to({"type": "message", "content": "hello"})
    frames = await frames_until_done(ws)
    assert frames[-1]["data"]["cancelled"] is False
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)
    assert await Run.objects.unscoped().filter(conversation=conversation).acount() == 2
    await ws.disconnect()
