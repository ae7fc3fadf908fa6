"""A durable run that lost its process while an MCP write was in flight resumes without making the
write again (the run's tool ledger), through the real consumer, run manager and MCP server."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents.engine.durable.ledger import UNKNOWN_OUTCOME
from agents.models import Run
from agents.runs.lifecycle import INTERRUPTED_CODE, runs_interrupt_lapsed
from agents.runs.manager import run_manager
from connectors.mcp.sync import connector_sync_mcp_tools
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.connectors.mcp.conftest import build_world
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]


def _is(event, **data):
    return lambda f: f["event"] == event and all(f["data"].get(k) == v for k, v in data.items())


async def _finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


async def test_a_resumed_run_does_not_repeat_an_mcp_write_that_was_in_flight(
    scripted_llm, mcp_server, settings
):
    settings.RUN_LEASE_RENEW_SECONDS = 0.05

    def build():
        world = build_world(llm_base_url=scripted_llm.base_url, url=mcp_server.url)
        connector_sync_mcp_tools(connector=world.erp, actor=None)
        return world

    world = await database_sync_to_async(build)()
    scripted_llm.script(
        tool_calls(call("erp__transfer", {"amount": 900}, id="t1")),
        text("I could not confirm the transfer."),
        text("The transfer's outcome is unknown; please check it."),
    )
    ws, connected, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    assert connected
    await ws.send_json_to({"type": "message", "content": "Transfer 900"})
    await frames_until(ws, _is("step", type="iteration", status="start"))
    for _ in range(200):
        if mcp_server.calls_of("transfer"):
            break
        await asyncio.sleep(0.05)
    assert mcp_server.calls_of("transfer") == [{"amount": 900.0}]
    run = await Run.objects.unscoped().aget(conversation=world.conversation)
    await (
        Run.objects.unscoped()
        .filter(pk=run.pk)
        .aupdate(lease_owner="dead-process", lease_expires_at=timezone.now() - timedelta(seconds=1))
    )
    assert await database_sync_to_async(runs_interrupt_lapsed)() == [run.pk]
    await frames_until(ws, _is("error", code=INTERRUPTED_CODE))
    await _finish_runs()

    await ws.send_json_to({"type": "resume_run"})
    after = await frames_until_done(ws)
    await _finish_runs()

    assert mcp_server.calls_of("transfer") == [{"amount": 900.0}]  # not made again
    (done,) = [f["data"] for f in after if _is("step", type="iteration", status="done")(f)]
    assert done["tool_call_id"] == "t1" and done["error"] == UNKNOWN_OUTCOME
    await ws.disconnect()
