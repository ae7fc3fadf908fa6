"""Stopping a run while its call waits for approval: the chat's approval event says cancelled, the inbox
says Cancelled, and the card on Feishu is updated to say so. The real consumer and run manager, the
scripted LLM, the fake Feishu server."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import reverse

from agents.runs.manager import run_manager
from hooks.models import ApprovalRequest
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.factories import PASSWORD
from tests.fakes.openai_server import call, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory
from tests.hooks.scenario import build_purchasing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]


@pytest.fixture
def world(scripted_llm, http_service, fake_feishu):
    def build():
        world = build_purchasing(
            llm_base_url=scripted_llm.base_url,
            erp_base_url=http_service.base_url,
            feishu_base_url=fake_feishu.base_url,
        )
        ApprovalPolicyFactory(
            organization=world.org,
            name="Payments",
            actions=[world.actions["create_payment"]],
            approver_open_ids=["ou_boss"],
            channel=world.channel,
        )
        return world

    return build


def _inbox_status(world, approval_id) -> str:
    client = Client()
    assert client.login(username=world.approver.username, password=PASSWORD)
    url = reverse("approvals-inbox-detail", kwargs={"org_slug": world.org.slug, "approval_id": approval_id})
    return client.get(url).content.decode()


async def test_stopping_a_waiting_run_says_cancelled_in_chat_inbox_and_on_feishu(
    world, scripted_llm, fake_feishu
):
    world = await database_sync_to_async(world)()
    scripted_llm.script(tool_calls(call("erp__create_payment", {"amount": 60000, "currency": "CNY"}, id="p")))
    ws, _, _ = await connect(world.conversation.pk, await bearer_for(world.requester))
    await ws.send_json_to({"type": "message", "content": "Pay 60000 CNY"})
    before = await frames_until(ws, lambda f: f["event"] == "approval")
    approval_id = before[-1]["data"]["approval_id"]
    assert len(fake_feishu.sent) == 1

    await ws.send_json_to({"type": "cancel"})
    rest = await frames_until_done(ws)
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)

    assert [f["data"]["status"] for f in rest if f["event"] == "approval"] == ["cancelled"]
    approval = await ApprovalRequest.objects.unscoped().aget(pk=approval_id)
    assert approval.status == "cancelled" and approval.card_status == "updated"
    card = fake_feishu.messages[approval.feishu_message_id].card
    assert "Cancelled" in card["header"]["title"]["content"] and "column_set" not in str(card)
    page = await database_sync_to_async(_inbox_status)(world, approval_id)
    assert "Cancelled" in page and "Expired" not in page
    await ws.disconnect()
