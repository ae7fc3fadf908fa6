"""An identical call (same action, same arguments, same run) that was already rejected or is still
pending is not asked again: approvers get one request, the model is told (issue #14, Low)."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents.engine.hooks import Block, HookContext, Park
from agents.engine.tool_context import ToolCallContext
from agents.runs.manager import run_manager
from hooks.approval import ApprovalGate
from hooks.models import ApprovalRequest
from hooks.registry import guard_rail_hooks
from hooks.services import approval_decide
from tests.agents.plan_script import PlanModel, step, verdict
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.harness import Emitted, blueprint_for, run_agent
from tests.hooks.scenario import build_purchasing, hold_large_payments

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]

PAYMENT = {"amount": 60000, "currency": "CNY"}


@pytest.fixture
def world(scripted_llm, http_service):
    def build(mode: str = "react"):
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        hold_large_payments(world)
        world.agent.execution_mode = mode
        world.agent.completion_check = False
        world.agent.save()
        return world

    return database_sync_to_async(build)


async def _reject(approval_id: str, approver) -> None:
    approval = await ApprovalRequest.objects.unscoped().aget(pk=approval_id)
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="reject", via="web", actor=approver, comment="budget frozen"
    )


def _tool_observations(requests) -> str:
    return str([m for body in requests for m in body["messages"] if m.get("role") == "tool"])


async def test_a_react_run_retrying_a_rejected_call_asks_the_approvers_once(
    world, scripted_llm, make_llm, http_service
):
    # given a run whose model retries a rejected payment with the same arguments
    w = await world()
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id="p1")),
        tool_calls(call("erp__create_payment", dict(PAYMENT), id="p2")),
        tool_calls(call("erp__create_payment", {"currency": "CNY", "amount": 60000}, id="p3")),
        text("The payment was rejected."),
    )
    emitted = Emitted()
    run = asyncio.ensure_future(run_agent(w, make_llm, "Pay", emit=emitted))
    try:
        pending = await emitted.next_approval()
        await _reject(pending["approval_id"], w.approver)
        await asyncio.wait_for(run, 15)
    finally:
        run.cancel()
    # then one request was made, nothing was paid, and the retries were told it was already rejected
    assert await ApprovalRequest.objects.unscoped().acount() == 1
    assert http_service.requests_to("/payments") == []
    seen = _tool_observations(scripted_llm.requests[-1:])
    assert seen.count("already rejected") == 2 and seen.count("budget frozen") == 3


async def test_an_identical_call_while_the_first_is_pending_is_told_it_is_still_pending(world):
    # given a run whose payment is pending (parked after the in-process hold)
    w = await world()
    emitted = Emitted()
    blueprint = await database_sync_to_async(blueprint_for)(w, emit=emitted)
    rails = await database_sync_to_async(guard_rail_hooks)(blueprint)
    gate = next(h for h in rails.hooks if isinstance(h, ApprovalGate))

    def attempt(call_id: str) -> HookContext:
        return HookContext(
            ToolCallContext("erp__create_payment", call_id, 1, blueprint.context.with_hold(0)), dict(PAYMENT)
        )

    assert isinstance(await gate.pre_tool_use(attempt("p1")), Park)
    # when the same call comes again under another id (a concurrent step, a retry)
    verdict_ = await gate.pre_tool_use(attempt("p2"))
    # then it is not asked again and the model is told the first is still pending
    assert isinstance(verdict_, Block) and "still waiting for approval" in verdict_.reason
    assert await ApprovalRequest.objects.unscoped().acount() == 1
    assert [a["status"] for a in emitted.approvals()] == ["pending"]


async def test_other_arguments_are_a_new_request(world, scripted_llm, make_llm, http_service):
    w = await world()
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id="p1")),
        tool_calls(call("erp__create_payment", {"amount": 70000, "currency": "CNY"}, id="p2")),
        text("Both rejected."),
    )
    emitted = Emitted()
    run = asyncio.ensure_future(run_agent(w, make_llm, "Pay", emit=emitted))
    try:
        for _ in range(2):
            pending = await emitted.next_approval()
            while pending["status"] != "pending":
                pending = await emitted.next_approval()
            await _reject(pending["approval_id"], w.approver)
        await asyncio.wait_for(run, 15)
    finally:
        run.cancel()
    assert await ApprovalRequest.objects.unscoped().acount() == 2


async def test_a_plan_step_retrying_a_rejected_call_asks_the_approvers_once(
    world, scripted_llm, http_service
):
    # given an agent in plan mode whose step retries the payment, and a second round that tries again
    w = await world(mode="plan")
    pay = [tool_calls(call("erp__create_payment", PAYMENT, id=f"s{n}")) for n in range(1, 5)]
    PlanModel(
        plans=[[step("1", "Pay the supplier", tool="erp__create_payment")]] * 2,
        verdicts=[
            verdict(False, 0.2, "The payment was not made."),
            verdict(True, 0.9, "It was rejected.", "The payment was rejected."),
        ],
        steps={"Pay the supplier": [*pay, text("The payment was rejected.")]},
        answer="The payment was rejected.",
    ).install(scripted_llm)
    ws, _, _ = await connect(w.conversation.pk, await bearer_for(w.requester))
    await ws.send_json_to({"type": "message", "content": "Pay 60000 CNY"})
    frames = await frames_until(ws, lambda f: f["event"] == "approval")
    pending = [f["data"] for f in frames if f["event"] == "approval"][-1]
    await _reject(pending["approval_id"], w.approver)
    await frames_until_done(ws)
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)
    await ws.disconnect()
    # then the approvers were asked once and nothing was paid
    assert await ApprovalRequest.objects.unscoped().acount() == 1
    assert http_service.requests_to("/payments") == []
