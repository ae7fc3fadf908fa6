"""The findings of issue #14 about a hostile model's tool arguments, through the real run path: the websocket
consumer, the run manager, the event writer and its checkpoints, the platform's guard rails and connector
tools calling a loopback HTTP service, and the scripted model.

- High: a payment whose raw arguments hold ``NaN`` under an ``amount > 50000`` policy is not made, the model
  is told why, the run's events and checkpoint are stored, and the attempt is in the call log.
- Low: a connector secret the model sends as a tool argument is in none of the run's stored events or
  checkpoints (nor in the call log).
"""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.models import Run, RunCheckpoint, RunEvent
from agents.runs.manager import run_manager
from connectors.models import Connector, ConnectorCallLog
from tests.agents.ws_helpers import ask_until_done, bearer_for, connect, frames_until, frames_until_done
from tests.fakes.openai_server import call, hang, text, tool_calls
from tests.hooks.scenario import build_purchasing, hold_large_payments

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]

ERP_SECRET = "sk-erp-live-7f3a9c2e41"


@pytest.fixture
async def world(scripted_llm, http_service):
    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        erp = Connector.objects.unscoped().get(pk=world.erp.pk)
        erp.auth_type = "bearer"
        erp.auth_secret = ERP_SECRET
        erp.save()
        hold_large_payments(world, approver_open_ids=[])
        return world

    return await database_sync_to_async(build)()


async def _finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def _stored(conversation_id) -> tuple[list[dict], Run]:
    events = list(
        RunEvent.objects.filter(conversation_id=conversation_id)
        .order_by("seq")
        .values_list("data", flat=True)
    )
    return events, Run.objects.unscoped().filter(conversation_id=conversation_id).get()


async def test_a_nan_payment_is_not_made_is_explained_to_the_model_and_leaves_every_record(
    world, scripted_llm, http_service
):
    # given a policy holding payments over 50,000, and a model that sends NaN as the amount
    raw = '{"order_id": "SO-1002", "amount": NaN, "currency": "CNY"}'
    scripted_llm.script(
        tool_calls(call("erp__create_payment", raw, id="pay-nan")),
        text("I could not make the payment."),
        text("I could not make the payment."),
    )
    frames = await ask_until_done(world.conversation.pk, world.requester, "Pay order SO-1002")

    # then the ERP received nothing and no approval was needed to refuse it
    assert http_service.requests_to("/payments") == []
    assert [f for f in frames if f["event"] == "approval"] == []
    # and the model was told what was wrong with its arguments
    observation = [m for m in scripted_llm.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert "not valid JSON" in observation and "NaN" in observation
    done = [
        f["data"] for f in frames if f["data"].get("type") == "iteration" and f["data"]["status"] == "done"
    ]
    assert done[0]["outcome"] == "invalid_args"
    # and the run's events and its checkpoint were stored, in order, with nothing lost
    events, run = await database_sync_to_async(_stored)(world.conversation.pk)
    assert [f["data"] for f in frames] == events
    assert run.status == "done" and run.checkpoint_seq > 0
    # and the attempt is in the call log
    row = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay-nan")
    assert row.status == "error" and row.is_write and "NaN" in row.error


async def test_a_connector_secret_sent_as_an_argument_is_in_no_stored_event_or_checkpoint(
    world, scripted_llm, http_service
):
    # given a model that sends the ERP's own credential as an argument, then waits
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {"note": ERP_SECRET}, id="leak")),
        hang(30, then=text("Listed.")),
    )
    ws, _, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    await ws.send_json_to({"type": "message", "content": "List payments"})
    seen = await frames_until(
        ws, lambda f: f["data"].get("type") == "iteration" and f["data"].get("status") == "done"
    )
    await scripted_llm.until_received(2)
    # when the call is made and the run waits for the model, its checkpoints are stored
    checkpoints: list[dict] = []
    async with asyncio.timeout(10):
        while not any("leak" in str(c) for c in checkpoints):  # noqa: ASYNC110 - the writer is a thread
            checkpoints = [c.data async for c in RunCheckpoint.objects.all()]
            await asyncio.sleep(0.05)
    await ws.send_json_to({"type": "cancel"})
    seen += await frames_until_done(ws)
    await _finish_runs()
    await ws.disconnect()

    # then neither the events, nor the checkpoints, nor the call log hold the secret
    events, run = await database_sync_to_async(_stored)(world.conversation.pk)
    start = [e for e in events if e.get("type") == "iteration" and e.get("status") == "start"][0]
    assert start["tool_args"] == {"note": "[redacted]"}
    assert ERP_SECRET not in str(events) and ERP_SECRET not in str(checkpoints)
    assert ERP_SECRET not in str(run.checkpoint) and ERP_SECRET not in str(seen)
    row = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="leak")
    assert row.arguments == {"note": "[redacted]"}
    # and the call itself was made with what the model sent
    assert http_service.requests_to("/payments")
