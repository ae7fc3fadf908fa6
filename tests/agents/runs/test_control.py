"""Control messages between processes are typed values, turned into channel-layer messages and back in one
module, on the wire older processes speak; anything else on a run's channel is refused and the run keeps
listening."""

from __future__ import annotations

import uuid

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer

from agents.models import Run, RunStatus
from agents.runs.control import (
    CANCEL,
    ControlFor,
    ControlRefused,
    FollowUp,
    control_message,
    control_parse,
)
from agents.runs.events.store import run_group
from agents.runs.manager import run_manager
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.fakes.openai_server import hang

# The cache, channel layer or broker the settings name: CI's second pass (PostgreSQL + Redis) runs it too.
pytestmark = pytest.mark.services

RUN = uuid.UUID("6f1c1d4e-0000-4000-8000-000000000001")


def test_a_follow_up_travels_as_the_interrupt_action_older_processes_understand():
    assert control_message(RUN, FollowUp("Also order 8", 41)) == {
        "type": "run.control",
        "run_id": str(RUN),
        "action": "interrupt",
        "content": "Also order 8",
        "message_id": 41,
    }
    assert control_message(RUN, CANCEL) == {
        "type": "run.control",
        "run_id": str(RUN),
        "action": "cancel",
        "content": "",
        "message_id": None,
    }


@pytest.mark.parametrize("control", [FollowUp("Also order 8", 41), FollowUp("no id"), CANCEL])
def test_every_control_reads_back_as_the_value_sent(control):
    assert control_parse(control_message(RUN, control)) == ControlFor(RUN, control)


def test_a_follow_up_sent_by_its_new_name_is_read_too():
    message = {**control_message(RUN, FollowUp("x", 1)), "action": "follow_up"}
    assert control_parse(message) == ControlFor(RUN, FollowUp("x", 1))


@pytest.mark.parametrize(
    "change",
    [
        {"type": "run.event"},
        {"run_id": None},
        {"run_id": "not-a-uuid"},
        {"action": "stop"},
        {"action": None},
        {"content": None},
        {"content": ["a list"]},
        {"message_id": "41"},
        {"message_id": True},
    ],
    ids=repr,
)
def test_a_message_that_is_not_a_valid_control_is_refused(change):
    message = {**control_message(RUN, FollowUp("x", 1)), **change}
    assert isinstance(control_parse(message), ControlRefused)


def test_a_message_without_a_run_id_is_refused():
    message = control_message(RUN, CANCEL)
    del message["run_id"]
    assert isinstance(control_parse(message), ControlRefused)


@pytest.mark.django_db(transaction=True)
async def test_a_malformed_control_message_does_not_stop_the_run_listening(chat, scripted_llm, caplog):
    # Given a run that works (its model hangs), started over the chat socket
    scripted_llm.script(hang(20))
    user, conversation = await database_sync_to_async(chat)()
    ws, _, _ = await connect(conversation.pk, await bearer_for(user))
    await ws.send_json_to({"type": "message", "content": "Summarise every order"})
    await frames_until(ws, lambda f: f["data"].get("type") == "thinking")
    run = await Run.objects.unscoped().aget(conversation=conversation)

    # When its group gets a malformed control message, then a cancel, both over the channel layer
    layer = get_channel_layer()
    await layer.group_send(run_group(run.pk), {"type": "run.control", "action": "cancel"})
    await layer.group_send(run_group(run.pk), control_message(run.pk, CANCEL))

    # Then the cancel still reaches the run, and the malformed message is logged
    frames = await frames_until_done(ws)
    await run_manager.wait(run.pk)
    assert frames[-1]["data"]["cancelled"] is True
    assert (await Run.objects.unscoped().aget(pk=run.pk)).status == RunStatus.CANCELLED
    assert any("refused" in r.getMessage() for r in caplog.records)
    await ws.disconnect()
