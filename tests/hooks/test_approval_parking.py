"""The approval gate in durable runs: the in-process hold parks the run, and a replayed call finds the
request it opened before (only for the same call with the same arguments)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents.engine.hooks import HookContext, Park, Rewrite
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from hooks.approval import ApprovalGate
from hooks.models import ApprovalRequest, ApprovalStatus
from hooks.registry import guard_rail_hooks
from hooks.services import approval_decide
from tests.hooks.harness import Emitted, blueprint_for
from tests.hooks.scenario import build_purchasing, hold_large_payments

pytestmark = pytest.mark.django_db(transaction=True)

PAYMENT = {"amount": 60000, "currency": "CNY"}


@pytest.fixture
def gate_for(scripted_llm, http_service):
    """``gate_for()``: the approval gate of a new run of the purchasing organisation, its events, world."""

    def build() -> tuple[ApprovalGate, Emitted, Any, RunContext]:
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        hold_large_payments(world)
        emitted = Emitted()
        blueprint = blueprint_for(world, emit=emitted)
        gate = next(h for h in guard_rail_hooks(blueprint).hooks if isinstance(h, ApprovalGate))
        return gate, emitted, world, blueprint.context

    return database_sync_to_async(build)


def _call(
    metadata: RunContext, args: dict[str, Any], *, replayed: bool = False, hold: float = 0
) -> HookContext:
    return HookContext(
        ToolCallContext("erp__create_payment", "pay-1", 1, metadata.with_hold(hold), replayed=replayed), args
    )


async def test_a_request_still_pending_after_the_hold_parks_the_run_with_the_approval_named(gate_for):
    gate, emitted, _, metadata = await gate_for()
    parked = await gate.pre_tool_use(_call(metadata, PAYMENT))
    assert isinstance(parked, Park)
    approval = await ApprovalRequest.objects.unscoped().aget()
    assert parked.as_dict() == {
        "reason": "approval",
        "approval_id": str(approval.pk),
        "tool_call_id": "pay-1",
    }
    assert approval.status == ApprovalStatus.PENDING  # parking is not abandoning
    assert [a["status"] for a in emitted.approvals()] == ["pending"]


async def test_the_approval_event_names_the_plan_step_of_the_call_the_gate_was_handed(gate_for):
    # given the gate of a run whose emit adds nothing, and a call made by plan step 2 of round 1
    gate, emitted, _, metadata = await gate_for()
    step = metadata.with_hold(0)
    call = ToolCallContext("erp__create_payment", "pay-1", 1, replace(step, plan_step_id="2", plan_round=1))

    # when the gate asks for the call's approval
    assert isinstance(await gate.pre_tool_use(HookContext(call, PAYMENT)), Park)

    # then the chat's approval event names that step and round
    [pending] = emitted.approvals()
    assert (pending["tool_call_id"], pending["plan_step_id"], pending["plan_round"]) == ("pay-1", "2", 1)


async def test_the_approval_event_of_a_call_outside_a_plan_names_no_step(gate_for):
    gate, emitted, _, metadata = await gate_for()
    assert isinstance(await gate.pre_tool_use(_call(metadata, PAYMENT)), Park)
    [pending] = emitted.approvals()
    assert "plan_step_id" not in pending and "plan_round" not in pending


async def test_a_replayed_call_goes_on_with_the_decision_on_its_earlier_request(gate_for):
    gate, emitted, world, metadata = await gate_for()
    assert isinstance(await gate.pre_tool_use(_call(metadata, PAYMENT)), Park)
    approval = await ApprovalRequest.objects.unscoped().aget()
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="approve", via="web", actor=world.approver, comment="ok"
    )

    verdict = await gate.pre_tool_use(_call(metadata, PAYMENT, replayed=True))

    assert verdict == Rewrite(PAYMENT)
    assert await ApprovalRequest.objects.unscoped().acount() == 1  # not asked again
    assert [a["status"] for a in emitted.approvals()] == ["pending", "approved"]


async def _payment_parked_then_approved(gate_for) -> tuple[ApprovalGate, RunContext]:
    """A new run's gate, whose call of ``PAYMENT`` parked and whose request the approver then approved."""
    gate, _, world, metadata = await gate_for()
    assert isinstance(await gate.pre_tool_use(_call(metadata, PAYMENT)), Park)
    approval = await ApprovalRequest.objects.unscoped().aget()
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="approve", via="web", actor=world.approver
    )
    return gate, metadata


async def test_a_replayed_call_with_other_arguments_is_asked_for_afresh(gate_for):
    gate, metadata = await _payment_parked_then_approved(gate_for)

    assert isinstance(
        await gate.pre_tool_use(_call(metadata, {"amount": 90000, "currency": "CNY"}, replayed=True)), Park
    )
    assert await ApprovalRequest.objects.unscoped().acount() == 2


async def test_a_call_that_is_not_a_replay_never_reuses_a_request_with_the_same_id(gate_for):
    gate, metadata = await _payment_parked_then_approved(gate_for)

    assert isinstance(
        await gate.pre_tool_use(_call(metadata, PAYMENT)), Park
    )  # a model reusing "pay-1" in a later turn
    assert await ApprovalRequest.objects.unscoped().acount() == 2
