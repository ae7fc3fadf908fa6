"""A condition on a decimal-string amount through the real run path (issue #15): the demo ERP of a live
server imported from its OpenAPI document (whose amounts are strings), the websocket consumer and run
manager, the platform's guard rails and the scripted model. Under "Large payments" (``amount > 10000``) a
payment of "50.00" is made without approval; one of "18600.00" is held, and its request says why."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from agents.runs.manager import run_manager
from connectors.demo_api.models import DemoPayment, DemoPurchaseOrder
from hooks.models import ApprovalRequest
from hooks.services import approval_decide
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, ModelConfigFactory
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.connectors.demo_erp import demo_erp_connector, demo_erp_document
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]


@pytest.fixture
async def world(live_server, scripted_llm):
    document = await demo_erp_document(live_server.url)

    def build():
        org = OrganizationFactory(slug="acme", name="Acme")
        requester = member_of(org, Role.MEMBER, username="mia")
        approver = member_of(org, Role.APPROVER, username="april")
        ModelConfigFactory(organization=org, base_url=scripted_llm.base_url, is_default=True)
        agent = AgentFactory(organization=org, name="Purchasing assistant", instructions="Be brief.")
        connector, _ = demo_erp_connector(org, live_server.url, document)
        agent.connectors.add(connector)
        ApprovalPolicyFactory(
            organization=org,
            name="Large payments",
            actions=[connector.actions.get(name="create_payment")],
            condition="amount > 10000",
            approver_users=[approver],
            approver_open_ids=[],
        )
        order = DemoPurchaseOrder.objects.create(
            number="PO-0001", supplier="Acme Parts", amount="20000.00", status="approved"
        )
        conversation = ConversationFactory(organization=org, user=requester, agent=agent)
        return requester, approver, conversation, order

    requester, approver, conversation, order = await database_sync_to_async(build)()
    return {"requester": requester, "approver": approver, "conversation": conversation, "order": order}


async def _finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def _approvals(frames):
    return [f["data"] for f in frames if f["event"] == "approval"]


async def test_a_small_decimal_string_payment_runs_and_a_large_one_is_held_with_its_reason(
    world, scripted_llm
):
    order = world["order"]
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"order_id": order.pk, "amount": "50.00"}, id="pay-small")),
        text("Paid 50.00."),
        text("Paid 50.00 CNY for PO-0001."),  # the answer synthesis
        tool_calls(call("erp__create_payment", {"order_id": order.pk, "amount": "18600.00"}, id="pay-large")),
        text("The payment was not approved."),
        text("The payment of 18,600.00 CNY was rejected."),
    )
    ws, _, _ = await connect(world["conversation"].pk, await bearer_for(world["requester"]))

    # a payment of "50.00" is made at once: no approval is asked for
    await ws.send_json_to({"type": "message", "content": "Pay 50 CNY for PO-0001"})
    small = await frames_until_done(ws)
    await _finish_runs()
    assert _approvals(small) == []
    assert await ApprovalRequest.objects.unscoped().acount() == 0
    assert [str(p.amount) async for p in DemoPayment.objects.all()] == ["50.00"]

    # a payment of "18600.00" waits for approval, and its request says which condition held it
    await ws.send_json_to({"type": "message", "content": "Pay 18,600 CNY for purchase order PO-0001"})
    held = await frames_until(ws, lambda f: f["event"] == "approval")
    pending = _approvals(held)[-1]
    assert pending["status"] == "pending" and pending["tool_args"]["amount"] == "18600.00"
    approval = await ApprovalRequest.objects.unscoped().aget(pk=pending["approval_id"])
    assert approval.hold_reason == {"kind": "matched", "condition": "amount > 10000"}
    assert await sync_to_async(approval.held_because)() == "condition matched: amount > 10000"
    assert await DemoPayment.objects.acount() == 1  # nothing paid while it waits

    await database_sync_to_async(approval_decide)(
        approval=approval, decision="reject", via="web", actor=world["approver"], comment="too much"
    )
    await frames_until_done(ws)
    await _finish_runs()
    await ws.disconnect()
    assert await DemoPayment.objects.acount() == 1
