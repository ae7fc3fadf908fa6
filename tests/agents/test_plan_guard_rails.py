"""No guard rail can be bypassed by planning: a plan step's tool calls pass the same hooks as ReAct mode's.

The real consumer, run manager, connector tools (calling a loopback HTTP service) and guard rails; the
scripted LLM plays the planner, the step agents and the analyser.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from channels.db import database_sync_to_async
from django.core.cache import cache

from agents import runtime
from agents.runs.manager import run_manager
from connectors.models import ConnectorCallLog
from connectors.tools import connector_tools_for_run
from platform_core.services import organization_set_read_only
from tests.agents.plan_script import CHAT, STEP, PlanModel, step, task_of, verdict
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.eager_tasks import tasks_run_eagerly
from tests.fakes.http_service import LoopbackHTTPService, running_http_service
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.scenario import build_purchasing, hold_large_payments
from tests.hooks.web_decisions import decide_in_the_web_api

pytestmark = pytest.mark.django_db(transaction=True)

READ_ONLY_MESSAGE = "organisation is in read-only mode: quarter-end audit"


@pytest.fixture(autouse=True)
def platform_guard_rails(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Connector actions as tools (the platform's factory), Celery tasks run eagerly, fresh rate counters."""
    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)
    cache.clear()
    try:
        with tasks_run_eagerly():
            yield
    finally:
        cache.clear()


@pytest.fixture
def http_service() -> Iterator[LoopbackHTTPService]:
    with running_http_service() as service:
        yield service


def purchasing(llm_base_url: str, erp_base_url: str, mode: str):
    world = build_purchasing(llm_base_url=llm_base_url, erp_base_url=erp_base_url)
    world.agent.execution_mode = mode
    world.agent.completion_check = False
    world.agent.save()
    return world


async def finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def call_done(frames, tool_call_id):
    """The iteration-done payload of one tool call, from a ReAct ``step`` or a plan ``step_iteration``."""
    for frame in frames:
        data = frame["data"]
        in_react = frame["event"] == "step" and data.get("type") == "iteration"
        in_plan = frame["event"] == "plan" and data.get("type") == "step_iteration"
        if (in_react or in_plan) and data["status"] == "done" and data["tool_call_id"] == tool_call_id:
            return data
    raise AssertionError(f"no finished call {tool_call_id}")


def tool_message_after(body, tool_call_id):
    return next(m["content"] for m in body["messages"] if m.get("tool_call_id") == tool_call_id)


@pytest.mark.parametrize("mode", ["react", "plan"])
async def test_read_only_mode_blocks_a_write_inside_a_plan_step_exactly_as_in_react_mode(
    scripted_llm, http_service, mode
):
    # given a read-only organisation and a model that tries to pay
    pay = tool_calls(call("erp__create_payment", {"amount": 500, "currency": "CNY"}, id="w1"))
    model = PlanModel(
        plans=[
            [
                step("1", "Pay the supplier 500 CNY", tool="erp__create_payment"),
                step("2", "Report what happened", deps=["1"]),
            ]
        ],
        verdicts=[verdict(True, 1.0, "The payment was refused.")],
        steps={
            "Pay the supplier 500 CNY": [pay, text("Refused.")],
            "Report what happened": [text("Nothing paid.")],
        },
        chat=[pay, text("Refused.")],
        answer="The organisation is read-only, so nothing was paid.",
    ).install(scripted_llm)
    world = await database_sync_to_async(purchasing)(scripted_llm.base_url, http_service.base_url, mode)
    await database_sync_to_async(organization_set_read_only)(
        organization=world.org, actor=None, enabled=True, reason="quarter-end audit"
    )

    # when the user asks to pay, in ReAct mode or in plan mode
    ws, _, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    await ws.send_json_to({"type": "message", "content": "Pay the supplier 500 CNY."})
    frames = await frames_until_done(ws)
    await finish_runs()

    # then the call is blocked the same way: same outcome and reason, nothing reaches the ERP, the call
    # log says why, and the model is told
    # (a plan step's call ids carry the round and step, so steps sharing the run's hooks never collide)
    call_id = "w1" if mode == "react" else "r1.1.w1"
    done = call_done(frames, call_id)
    assert done["outcome"] == "blocked" and READ_ONLY_MESSAGE in done["observation"]
    assert http_service.requests == []
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id=call_id)
    assert log.status == "blocked_read_only"
    if mode == "plan":
        next_turn = next(
            b
            for b in model.bodies(STEP)
            if task_of(b) == "Pay the supplier 500 CNY" and len(b["messages"]) > 2
        )
        assert done["step_id"] == "1"
    else:
        next_turn = model.bodies(CHAT)[1]
    assert READ_ONLY_MESSAGE in tool_message_after(next_turn, call_id)
    await ws.disconnect()


async def test_an_approval_policy_holds_a_write_inside_a_plan_step_and_the_approval_names_the_step(
    scripted_llm, http_service
):
    # given a policy holding payments over 50,000 for an approver, and a plan that pays and lists payments
    PlanModel(
        plans=[
            [
                step("1", "Pay the supplier 60000 CNY", tool="erp__create_payment"),
                step("2", "List the payments", tool="erp__list_payments"),
            ]
        ],
        verdicts=[verdict(True, 0.9, "The payment was rejected; the payments are listed.")],
        steps={
            "Pay the supplier 60000 CNY": [
                tool_calls(call("erp__create_payment", {"amount": 60000, "currency": "CNY"}, id="pay-1")),
                text("The approver rejected the payment."),
            ],
            "List the payments": [tool_calls(call("erp__list_payments", {}, id="list-1")), text("Listed.")],
        },
        answer="The payment was rejected: the budget is frozen.",
    ).install(scripted_llm)

    def build():
        world = purchasing(scripted_llm.base_url, http_service.base_url, "plan")
        hold_large_payments(world, approver_open_ids=[])
        return world

    world = await database_sync_to_async(build)()
    ws, _, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    await ws.send_json_to({"type": "message", "content": "Pay the supplier 60000 CNY and list the payments."})

    # when the step asks to pay, the chat shows a pending approval on that step and nothing is paid yet
    before = await frames_until(ws, lambda f: f["event"] == "approval")
    pending = before[-1]["data"]
    assert pending["status"] == "pending" and pending["tool_call_id"] == "r1.1.pay-1"
    assert pending["plan_step_id"] == "1" and pending["plan_round"] == 1
    assert [r for r in http_service.requests_to("/payments") if r.method == "POST"] == []

    # and the approver rejects it in the web API
    response = await decide_in_the_web_api(world, pending["approval_id"], "reject", "the budget is frozen")
    assert response.status_code == 200, response.text
    rest = await frames_until_done(ws)
    await finish_runs()

    # then the step's call is blocked with the approver's reason, the other step's read went through
    rejected = [f["data"] for f in rest if f["event"] == "approval"]
    assert [(a["status"], a["plan_step_id"]) for a in rejected] == [("rejected", "1")]
    paid = call_done(before + rest, "r1.1.pay-1")
    assert paid["step_id"] == "1" and paid["outcome"] == "blocked"
    assert "the budget is frozen" in paid["observation"]
    assert [r.method for r in http_service.requests_to("/payments")] == ["GET"]
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="r1.1.pay-1")
    assert log.status == "rejected" and log.approval_ref == pending["approval_id"]
    assert rest[-1]["data"]["answer"] == "The payment was rejected: the budget is frozen."
    await ws.disconnect()
