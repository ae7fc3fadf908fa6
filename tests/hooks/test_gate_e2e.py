"""The whole approval gate, end to end: the real websocket consumer and run manager, the scripted LLM,
connector tools calling a loopback HTTP service, the fake Feishu server, and a signed, encrypted click
answered by our callback view."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from agents.runs.manager import run_manager
from connectors.models import ConnectorCallLog
from hooks.models import ApprovalRequest
from platform_core.models import AuditLog
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.scenario import build_purchasing, hold_large_payments
from tests.hooks.web_decisions import asgi_client, decide_in_the_web_api

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]

BOSS = "ou_boss"


@pytest.fixture
def purchasing(scripted_llm, http_service, fake_feishu):
    def build(**policy):
        world = build_purchasing(
            llm_base_url=scripted_llm.base_url,
            erp_base_url=http_service.base_url,
            feishu_base_url=fake_feishu.base_url,
        )
        hold_large_payments(world, approver_open_ids=[BOSS], channel=world.channel, **policy)
        return world

    return build


def approval_frames(frames):
    return [f["data"] for f in frames if f["event"] == "approval"]


async def ask_to_pay(world, scripted_llm, amount: int, call_id: str, *replies: str, message: str = ""):
    """The requester asks in the chat (``message``, else "Pay <amount> CNY"); the model calls
    ``create_payment`` for ``amount`` CNY, then says ``replies``. Returns the open websocket."""
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"amount": amount, "currency": "CNY"}, id=call_id)),
        *(text(reply) for reply in replies),
    )
    ws, _, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    await ws.send_json_to({"type": "message", "content": message or f"Pay {amount} CNY"})
    return ws


async def _finish_runs():
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


async def test_a_large_payment_waits_for_a_feishu_click_then_runs_with_the_approved_arguments(
    purchasing, scripted_llm, http_service, fake_feishu
):
    # given a policy holding payments over 50,000 for the boss's approval on Feishu
    world = await database_sync_to_async(purchasing)()
    ws = await ask_to_pay(
        world,
        scripted_llm,
        60000,
        "pay-1",
        "The payment was approved and made.",
        "The payment of 60,000 CNY was approved by your manager and has been made.",
        message="Pay 60000 CNY to the supplier",
    )

    # when the agent asks to pay, the chat shows a pending approval and one card reaches Feishu
    before = await frames_until(ws, lambda f: f["event"] == "approval")
    pending = approval_frames(before)[-1]
    assert pending["status"] == "pending" and pending["tool_name"] == "erp__create_payment"
    assert pending["tool_args"] == {"amount": 60000, "currency": "CNY"} and pending["tool_call_id"] == "pay-1"
    assert "Feishu user ou_boss" in pending["approvers"] and world.approver.username in pending["approvers"]
    assert http_service.requests_to("/payments") == []  # nothing ran yet
    approval_id = pending["approval_id"]
    assert len(fake_feishu.sent) == 1
    message = fake_feishu.sent[0]
    assert message.uuid == approval_id and message.chat_id == "oc_approvals"

    # and the boss clicks Approve on the card (signed and encrypted, answered by our callback)
    async with asgi_client() as client:
        status, reply = await fake_feishu.aclick(
            f"http://testserver/integrations/feishu/{world.channel.pk}/callback/",
            client=client,
            approval_id=approval_id,
            decision="approve",
            operator_open_id=BOSS,
        )
    assert status == 200 and reply["toast"]["type"] == "success"

    # then the call runs, the chat shows approved, and the card shows the outcome without buttons
    rest = await frames_until_done(ws)
    await _finish_runs()
    statuses = [a["status"] for a in approval_frames(before + rest)]
    assert statuses == ["pending", "approved"]
    approved = approval_frames(rest)[0]
    assert approved["decided_by"] == BOSS and approved["approval_id"] == approval_id
    payments = http_service.requests_to("/payments")
    assert [(r.method, r.json()) for r in payments] == [("POST", {"amount": 60000, "currency": "CNY"})]
    done = [f["data"] for f in rest if f["data"].get("type") == "iteration" and f["data"]["status"] == "done"]
    assert done[0]["outcome"] == "ok" and done[0]["error"] is None
    assert len(fake_feishu.sent) == 1  # sent once
    final_card = fake_feishu.messages[message.message_id].card
    assert "Approved" in final_card["header"]["title"]["content"]
    assert "column_set" not in str(final_card)  # the buttons are gone for everyone

    # and the call log and the audit log record who approved
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay-1")
    assert log.status == "ok" and log.approval_ref == approval_id and log.is_write and log.http_status == 200
    assert await ConnectorCallLog.objects.unscoped().acount() == 1
    entry = await AuditLog.objects.aget(action="approval.approved")
    assert entry.target_id == approval_id
    assert entry.after["decided_by_open_id"] == BOSS and entry.after["decided_via"] == "feishu"
    await ws.disconnect()


async def test_a_rejection_in_the_web_api_is_reported_to_the_model_as_a_human_decision(
    purchasing, scripted_llm, http_service, fake_feishu
):
    world = await database_sync_to_async(purchasing)()
    ws = await ask_to_pay(
        world,
        scripted_llm,
        90000,
        "pay-2",
        "The payment was rejected.",
        "Your manager rejected the payment: the budget is frozen.",
    )
    pending = approval_frames(await frames_until(ws, lambda f: f["event"] == "approval"))[-1]

    response = await decide_in_the_web_api(world, pending["approval_id"], "reject", "the budget is frozen")
    assert response.status_code == 200, response.text

    rest = await frames_until_done(ws)
    await _finish_runs()
    rejected = approval_frames(rest)[0]
    assert rejected["status"] == "rejected" and rejected["decided_by"] == world.approver.username
    assert rejected["reason"] == "the budget is frozen"
    assert http_service.requests_to("/payments") == []
    seen = str(scripted_llm.requests[1]["messages"])
    assert world.approver.username in seen and "the budget is frozen" in seen and "do not retry" in seen
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay-2")
    assert log.status == "rejected" and log.approval_ref == pending["approval_id"]
    # decided in the web app: the Feishu card is replaced by PATCH
    message = fake_feishu.sent[0]
    assert "Rejected" in fake_feishu.messages[message.message_id].card["header"]["title"]["content"]
    assert [u.kind for u in fake_feishu.updates] == ["patch"]
    await ws.disconnect()


async def test_an_unanswered_request_expires_and_the_model_is_told_so(
    purchasing, scripted_llm, http_service, fake_feishu
):
    world = await database_sync_to_async(lambda: purchasing(timeout_seconds=1))()
    ws = await ask_to_pay(
        world,
        scripted_llm,
        70000,
        "pay-3",
        "Nobody approved in time.",
        "The approval request expired; the payment was not made.",
    )
    frames = await frames_until_done(ws)
    await _finish_runs()
    assert [a["status"] for a in approval_frames(frames)] == ["pending", "expired"]
    assert http_service.requests_to("/payments") == []
    seen = str(scripted_llm.requests[1]["messages"])
    assert "expired" in seen and "not an error to retry" in seen
    approval = await ApprovalRequest.objects.unscoped().aget(tool_call_id="pay-3")
    assert approval.status == "expired"
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay-3")
    assert log.status == "expired" and log.approval_ref == str(approval.pk)
    card = fake_feishu.messages[fake_feishu.sent[0].message_id].card
    assert "Expired" in card["header"]["title"]["content"]
    await ws.disconnect()


async def test_a_small_payment_below_the_condition_runs_without_approval(
    purchasing, scripted_llm, http_service, fake_feishu
):
    world = await database_sync_to_async(purchasing)()
    ws = await ask_to_pay(world, scripted_llm, 100, "pay-4", "Paid.", "Paid 100 CNY.")
    frames = await frames_until_done(ws)
    await _finish_runs()
    assert approval_frames(frames) == []
    assert len(http_service.requests_to("/payments")) == 1
    assert fake_feishu.sent == []
    log = await ConnectorCallLog.objects.unscoped().aget(tool_call_id="pay-4")
    assert log.status == "ok" and log.approval_ref == ""
    await ws.disconnect()
