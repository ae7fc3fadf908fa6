"""The audit hook: exactly one call-log row per attempted connector call, whatever happened to it, with
the outcome, who approved it (the approval reference), and redacted arguments."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from connectors.models import ConnectorCallLog
from hooks.models import ApprovalRequest
from hooks.services import approval_decide
from platform_core.services import organization_set_read_only
from tests.factories import ConnectorActionFactory
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory, RateLimitFactory
from tests.hooks.harness import Emitted, cancelled_after, run_agent
from tests.hooks.scenario import add_query_action, build_purchasing, hold_large_payments

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]


@pytest.fixture
async def world(scripted_llm, http_service):
    def build():
        world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=http_service.base_url)
        ConnectorActionFactory(connector=world.erp, name="broken", method="GET", path_template="/status/500")
        add_query_action(world.erp, "slow", "/sleep", param="seconds", json_type="number")
        return world

    return await database_sync_to_async(build)()


async def logs() -> dict[str, ConnectorCallLog]:
    return {log.tool_call_id: log async for log in ConnectorCallLog.objects.unscoped().all()}


async def test_each_outcome_leaves_exactly_one_row(world, scripted_llm, make_llm, http_service):
    await database_sync_to_async(
        lambda: RateLimitFactory(organization=world.org, connector=world.erp, max_calls=3, per_user=True)
    )()
    scripted_llm.script(
        tool_calls(
            call("erp__list_payments", {}, id="ok"),
            call("erp__broken", {}, id="error"),
            call("erp__create_payment", {"amount": "lots"}, id="invalid"),
            call("erp__list_payments", {}, id="limited-1"),
            call("erp__list_payments", {}, id="limited-2"),
        ),
        text("Done."),
    )
    result = await run_agent(world, make_llm, "Do several things")
    assert {r.tool_call_id: r.outcome for r in result.tool_calls} == {
        "ok": "ok",
        "error": "error",
        "invalid": "invalid_args",
        "limited-1": "ok",
        "limited-2": "blocked",
    }
    rows = await logs()
    assert {k: v.status for k, v in rows.items()} == {
        "ok": "ok",
        "error": "error",
        "invalid": "error",
        "limited-1": "ok",
        "limited-2": "blocked_rate_limit",
    }
    assert await ConnectorCallLog.objects.unscoped().acount() == 5
    ok = rows["ok"]
    assert ok.http_status == 200 and ok.latency_ms > 0 and ok.response_bytes > 0 and not ok.is_write
    assert rows["error"].http_status == 500 and rows["error"].error
    assert "invalid" in rows["invalid"].error or "currency" in rows["invalid"].error
    assert rows["limited-2"].error.startswith("rate limit")
    assert ok.user_id == world.requester.pk and ok.agent_id == str(world.agent.pk)
    assert ok.conversation_id == str(world.conversation.pk) and ok.run_id
    assert ok.connector_id == world.erp.pk and ok.action_id == world.actions["list_payments"].pk


async def test_blocked_read_only_calls_are_recorded_with_their_redacted_arguments(
    world, scripted_llm, make_llm
):
    await database_sync_to_async(organization_set_read_only)(
        organization=world.org, actor=None, enabled=True, reason="audit"
    )
    scripted_llm.script(
        tool_calls(
            call("erp__create_payment", {"amount": 5, "currency": "CNY", "api_key": "sk-live-123"}, id="w")
        ),
        text("Blocked."),
    )
    await run_agent(world, make_llm, "Pay")
    row = (await logs())["w"]
    assert row.status == "blocked_read_only" and row.is_write
    assert row.arguments == {"amount": 5, "currency": "CNY", "api_key": "[redacted]"}
    assert row.error == "organisation is in read-only mode: audit"


async def test_a_call_the_engine_times_out_is_recorded_once(world, scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("erp__slow", {"seconds": 5}, id="slow")), text("Too slow."))
    result = await run_agent(world, make_llm, "Slow report", batch_timeout=0.5)
    assert result.tool_calls[0].outcome == "timeout"
    rows = await logs()
    assert list(rows) == ["slow"] and rows["slow"].status == "error" and "cancelled" in rows["slow"].error
    assert await ConnectorCallLog.objects.unscoped().acount() == 1


async def test_approved_rejected_and_expired_calls_carry_the_approval_reference(
    world, scripted_llm, make_llm
):
    def policies():
        hold_large_payments(world, approver_open_ids=[], condition="amount > 100")
        ApprovalPolicyFactory(
            organization=world.org, actions=[world.actions["delete_payment"]], timeout_seconds=1
        )

    await database_sync_to_async(policies)()
    scripted_llm.script(
        tool_calls(
            call("erp__create_payment", {"amount": 500, "currency": "CNY"}, id="approved"),
            call("erp__create_payment", {"amount": 900, "currency": "CNY"}, id="rejected"),
            call("erp__delete_payment", {"payment_id": "1"}, id="expired"),
        ),
        text("Done."),
    )
    emitted = Emitted()
    run = asyncio.create_task(run_agent(world, make_llm, "Pay twice and delete one", emit=emitted))
    try:
        for decision in ("approve", "reject"):
            pending = await emitted.next_approval()
            approval = await ApprovalRequest.objects.unscoped().aget(pk=pending["approval_id"])
            await database_sync_to_async(approval_decide)(
                approval=approval, decision=decision, via="web", actor=world.approver, comment="checked"
            )
            outcome = {"approve": "approved", "reject": "rejected"}[decision]
            assert (await emitted.next_approval())["status"] == outcome
        result = await run
    finally:
        if not run.done():
            run.cancel()
    assert [r.outcome for r in result.tool_calls] == ["ok", "blocked", "blocked"]
    rows = await logs()
    approvals = {a.tool_call_id: a async for a in ApprovalRequest.objects.unscoped().all()}
    for key, status in (("approved", "ok"), ("rejected", "rejected"), ("expired", "expired")):
        assert rows[key].status == status
        assert rows[key].approval_ref == str(approvals[key].pk)
    assert await ConnectorCallLog.objects.unscoped().acount() == 3


async def test_a_run_stopped_while_waiting_for_approval_cancels_the_request_and_records_the_call(
    world, scripted_llm, make_llm
):
    await database_sync_to_async(
        lambda: ApprovalPolicyFactory(organization=world.org, actions=[world.actions["create_payment"]])
    )()
    scripted_llm.script(tool_calls(call("erp__create_payment", {"amount": 1, "currency": "CNY"}, id="p")))
    emitted = Emitted()
    run = asyncio.create_task(run_agent(world, make_llm, "Pay", emit=emitted))
    async with cancelled_after(run):
        await emitted.next_approval()
    assert (await emitted.next_approval())["status"] == "cancelled"
    approval = await ApprovalRequest.objects.unscoped().aget(tool_call_id="p")
    assert approval.status == "cancelled"
    row = (await logs())["p"]
    assert row.status == "error" and row.approval_ref == str(approval.pk)
