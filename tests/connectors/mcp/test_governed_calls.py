"""MCP tool calls through the real run path (engine, guard rails, call log) against a real SDK server:
read-only mode, approval conditions on arguments, rate limits, the call log row, truncation, isError,
bearer tokens, the SSRF guard, a hanging server, a dropped session, cancellation and stdio refusal."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async

from connectors.mcp.confirm import mcp_action_confirm_read
from connectors.mcp.sync import connector_sync_mcp_tools
from connectors.mcp_trust import server_claim
from connectors.models import ConnectorAction, ConnectorCallLog
from hooks.models import ApprovalRequest
from hooks.services import approval_decide
from platform_core.services import organization_set_read_only
from tests.connectors.mcp.conftest import build_world
from tests.fakes.mcp_servers import FakeMcpServer
from tests.fakes.openai_server import call, text, tool_calls
from tests.hooks.factories import ApprovalPolicyFactory, RateLimitFactory
from tests.hooks.harness import Emitted, run_agent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("connector_tools")]


async def _world(scripted_llm, server: FakeMcpServer, *, confirm_reads: bool = True, **extra):
    def build():
        world = build_world(llm_base_url=scripted_llm.base_url, url=server.url, **extra)
        report = connector_sync_mcp_tools(connector=world.erp, actor=None)
        assert "create_payment" in report.added, report
        if confirm_reads:  # as an admin would: the tools the server claims only read
            for action in ConnectorAction.objects.unscoped().filter(connector=world.erp):
                if server_claim(action.mcp_annotations).kind == "read":
                    mcp_action_confirm_read(action=action, actor=None)
        return world

    return await database_sync_to_async(build)()


async def _logs():
    return [log async for log in ConnectorCallLog.objects.unscoped().order_by("id")]


async def test_a_read_call_reaches_the_server_and_writes_one_call_log_row(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server)
    scripted_llm.script(
        tool_calls(call("erp__lookup_order", {"order_id": "A-1", "api_key": "hunter2"}, id="c1")),
        text("Shipped."),
    )
    result = await run_agent(world, make_llm, "Where is A-1?")
    record = result.tool_calls[0]
    assert record.outcome == "ok"
    assert '"status":"shipped"' in record.observation
    assert mcp_server.calls_of("lookup_order") == [{"order_id": "A-1"}]
    (log,) = await _logs()
    assert log.status == "ok" and log.mcp_method == "tools/call" and log.tool_name == "erp__lookup_order"
    assert log.tool_call_id == "c1" and not log.is_write
    assert log.arguments["order_id"] == "A-1" and log.arguments["api_key"] != "hunter2"  # redacted
    assert log.response_bytes > 0 and log.request_bytes > 0 and log.latency_ms > 0


async def test_read_only_mode_blocks_an_mcp_write_tool(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server)
    await database_sync_to_async(organization_set_read_only)(
        organization=world.org, actor=None, enabled=True, reason="audit"
    )
    scripted_llm.script(
        tool_calls(
            call("erp__create_payment", {"amount": 5, "currency": "EUR"}, id="w"),
            call("erp__lookup_order", {"order_id": "A-1"}, id="r"),
        ),
        text("Blocked."),
    )
    result = await run_agent(world, make_llm, "Pay")
    outcomes = {r.tool_call_id: r.outcome for r in result.tool_calls}
    assert outcomes == {"w": "blocked", "r": "ok"}
    assert mcp_server.calls_of("create_payment") == []
    statuses = {log.tool_call_id: log.status for log in await _logs()}
    assert statuses == {"w": "blocked_read_only", "r": "ok"}


async def test_read_only_mode_blocks_a_tool_the_server_claims_read_only_until_an_admin_confirms_it(
    scripted_llm, make_llm, mcp_server
):
    world = await _world(scripted_llm, mcp_server, confirm_reads=False)
    await database_sync_to_async(organization_set_read_only)(
        organization=world.org, actor=None, enabled=True, reason="audit"
    )
    scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "A-1"}, id="r")), text("Blocked."))
    result = await run_agent(world, make_llm, "Where is A-1?")
    assert result.tool_calls[0].outcome == "blocked"
    assert mcp_server.calls_of("lookup_order") == []
    assert [log.status for log in await _logs()] == ["blocked_read_only"]


async def test_an_admin_confirming_a_tool_as_a_read_lets_it_through_read_only_mode(
    scripted_llm, make_llm, mcp_server
):
    world = await _world(scripted_llm, mcp_server)
    payment = await ConnectorAction.objects.unscoped().aget(name="create_payment")
    await database_sync_to_async(mcp_action_confirm_read)(action=payment, actor=world.requester)
    await database_sync_to_async(organization_set_read_only)(
        organization=world.org, actor=None, enabled=True, reason="audit"
    )
    scripted_llm.script(tool_calls(call("erp__create_payment", {"amount": 5, "currency": "EUR"})), text("ok"))
    result = await run_agent(world, make_llm, "Pay")
    assert result.tool_calls[0].outcome == "ok"


async def test_an_approval_condition_on_an_mcp_argument_holds_only_large_payments(
    scripted_llm, make_llm, mcp_server
):
    world = await _world(scripted_llm, mcp_server)

    def policy():
        ApprovalPolicyFactory(
            organization=world.org,
            name="Large payments",
            actions=[ConnectorAction.objects.unscoped().get(name="create_payment")],
            condition="amount > 10000",
            approver_users=[world.approver],
            approver_open_ids=[],
        )

    await database_sync_to_async(policy)()
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"amount": 50, "currency": "EUR"}, id="small")),
        tool_calls(call("erp__create_payment", {"amount": 18600, "currency": "EUR"}, id="large")),
        text("Done."),
    )
    emitted = Emitted()
    run = asyncio.create_task(run_agent(world, make_llm, "Pay both", emit=emitted))
    try:
        pending = await emitted.next_approval()
        assert pending["status"] == "pending" and pending["tool_args"]["amount"] == 18600
        assert mcp_server.calls_of("create_payment") == [{"amount": 50.0, "currency": "EUR"}]
        approval = await ApprovalRequest.objects.unscoped().aget(pk=pending["approval_id"])
        await database_sync_to_async(approval_decide)(
            approval=approval, decision="reject", via="web", actor=world.approver, comment="too much"
        )
        result = await asyncio.wait_for(run, 30)
    finally:
        run.cancel()
    outcomes = {r.tool_call_id: r.outcome for r in result.tool_calls}
    assert outcomes == {"small": "ok", "large": "blocked"}
    assert len(mcp_server.calls_of("create_payment")) == 1
    statuses = {log.tool_call_id: log.status for log in await _logs()}
    assert statuses == {"small": "ok", "large": "rejected"}


async def test_a_rate_limit_blocks_the_second_mcp_call(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server)
    await database_sync_to_async(
        lambda: RateLimitFactory(organization=world.org, connector=world.erp, max_calls=1, per_user=True)
    )()
    scripted_llm.script(
        tool_calls(
            call("erp__lookup_order", {"order_id": "1"}, id="a"),
            call("erp__lookup_order", {"order_id": "2"}, id="b"),
        ),
        text("One."),
    )
    result = await run_agent(world, make_llm, "Two lookups")
    outcomes = {r.tool_call_id: r.outcome for r in result.tool_calls}
    assert sorted(outcomes.values()) == ["blocked", "ok"]
    assert len(mcp_server.calls_of("lookup_order")) == 1
    assert sorted(log.status for log in await _logs()) == ["blocked_rate_limit", "ok"]


async def test_an_is_error_result_is_a_tool_error_the_model_sees(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server)
    scripted_llm.script(tool_calls(call("erp__fail", {"reason": "order 9 does not exist"})), text("Sorry."))
    result = await run_agent(world, make_llm, "Fail")
    record = result.tool_calls[0]
    assert record.outcome == "error" and "order 9 does not exist" in record.observation
    (log,) = await _logs()
    assert log.status == "error" and "order 9 does not exist" in log.error


async def test_a_large_result_is_truncated_for_the_model(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server, max_response_bytes=5_000)
    scripted_llm.script(tool_calls(call("erp__big", {"size": 25_000})), text("Big."))
    result = await run_agent(world, make_llm, "Big")
    record = result.tool_calls[0]
    assert record.outcome == "ok" and len(record.observation) < 10_000 and "truncated" in record.observation
    (log,) = await _logs()
    assert log.response_bytes > 25_000


async def test_an_image_reaches_the_tool_card_as_an_artifact_and_the_model_as_a_line(
    scripted_llm, make_llm, mcp_server
):
    world = await _world(scripted_llm, mcp_server)
    scripted_llm.script(tool_calls(call("erp__chart", {})), text("Here."))
    result = await run_agent(world, make_llm, "Chart")
    record = result.tool_calls[0]
    assert "Sales by month" in record.observation and "image/png" in record.observation
    assert "iVBOR" not in record.observation  # no base64 in the model's context
    (artifact,) = record.result.artifacts
    assert artifact.mime_type == "image/png" and artifact.content.startswith(b"\x89PNG")


async def test_a_server_that_needs_a_bearer_token_gets_the_stored_one(scripted_llm, make_llm):
    with FakeMcpServer(token="mcp-token-42") as server:
        world = await _world(scripted_llm, server, auth_type="bearer", auth_secret="mcp-token-42")
        scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "7"})), text("ok"))
        result = await run_agent(world, make_llm, "Lookup")
        assert result.tool_calls[0].outcome == "ok"
        assert all(h.get("authorization") == "Bearer mcp-token-42" for _, _, h in server.requests)


async def test_an_oauth_access_token_the_server_echoes_back_is_redacted_from_the_result(
    scripted_llm, make_llm
):
    from connectors.http_auth import forget_all_tokens

    forget_all_tokens()
    with FakeMcpServer(token="oauth-access-77") as server:
        world = await _world(
            scripted_llm,
            server,
            auth_type="oauth2_client_credentials",
            oauth_client_id="platform",
            oauth_token_url=f"{server.base_url}/token",
            auth_secret="client-secret-9",
        )
        # The order id is the access token, so the server's answer carries it back.
        scripted_llm.script(
            tool_calls(call("erp__lookup_order", {"order_id": "oauth-access-77"})), text("ok")
        )
        result = await run_agent(world, make_llm, "Lookup")
    forget_all_tokens()
    record = result.tool_calls[0]
    assert record.outcome == "ok" and '"status":"shipped"' in record.observation
    assert "oauth-access-77" not in record.observation and "[redacted]" in record.observation


async def test_a_wrong_token_is_an_error_without_the_secret(scripted_llm, make_llm):
    with FakeMcpServer(token="right") as server:

        def build():
            world = build_world(
                llm_base_url=scripted_llm.base_url, url=server.url, auth_type="bearer", auth_secret="wrong-7"
            )
            ConnectorAction.objects.create(
                connector=world.erp, organization=world.org, name="lookup_order", mcp_tool="lookup_order"
            )
            return world

        world = await database_sync_to_async(build)()
        scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "7"})), text("no"))
        result = await run_agent(world, make_llm, "Lookup")
        record = result.tool_calls[0]
        assert record.outcome == "error" and "wrong-7" not in record.observation
        assert server.calls == []


async def test_the_ssrf_guard_refuses_a_private_server_and_a_redirect_to_one(
    scripted_llm, make_llm, mcp_server
):
    world = await _world(scripted_llm, mcp_server)
    # The admin allowed 127.0.0.1 only; the server now points elsewhere: a private address, then a
    # redirect from an allowed host to a private one.
    await (
        type(world.erp)
        .objects.for_org(world.org)
        .filter(pk=world.erp.pk)
        .aupdate(base_url="http://10.255.255.1/mcp", connect_timeout=1)
    )
    scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "1"})), text("no"))
    result = await run_agent(world, make_llm, "Lookup")
    assert result.tool_calls[0].outcome == "error"
    assert "SSRF guard" in result.tool_calls[0].observation and "private" in result.tool_calls[0].observation

    mcp_server.redirect_to = "http://10.255.255.1/mcp"
    await (
        type(world.erp)
        .objects.for_org(world.org)
        .filter(pk=world.erp.pk)
        .aupdate(base_url=f"{mcp_server.base_url}/moved")
    )
    scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "1"})), text("no"))
    result = await run_agent(world, make_llm, "Lookup")
    assert result.tool_calls[0].outcome == "error"
    assert mcp_server.calls_of("lookup_order") == []


async def test_a_hanging_server_times_out_without_blocking_the_event_loop(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server, read_timeout=1.0)
    scripted_llm.script(tool_calls(call("erp__sleep", {"seconds": 30})), text("slow"))
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.05)
            ticks += 1

    beat = asyncio.create_task(ticker())
    started = time.perf_counter()
    try:
        result = await run_agent(world, make_llm, "Sleep")
    finally:
        beat.cancel()
    elapsed = time.perf_counter() - started
    record = result.tool_calls[0]
    assert record.outcome == "error" and "did not answer" in record.observation
    assert elapsed < 10
    assert ticks >= elapsed / 0.05 * 0.5  # the loop kept running other tasks meanwhile


async def test_a_dropped_session_is_reinitialised_and_the_call_made_once(scripted_llm, make_llm, mcp_server):
    world = await _world(scripted_llm, mcp_server)
    scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "1"})), text("one"))
    await run_agent(world, make_llm, "First")
    mcp_server.forget_sessions()  # as after a server restart
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"amount": 1, "currency": "EUR"})), text("two")
    )
    result = await run_agent(world, make_llm, "Second")
    assert result.tool_calls[0].outcome == "ok"
    assert len(mcp_server.calls_of("create_payment")) == 1
    initialises = [p for m, p, h in mcp_server.requests if m == "POST" and "mcp-session-id" not in h]
    assert len(initialises) == 3  # the sync's own session, the first run's, and the one after the drop


async def test_cancelling_a_run_while_an_mcp_call_is_in_flight_stops_it_and_keeps_the_log_row(
    scripted_llm, make_llm, mcp_server
):
    world = await _world(scripted_llm, mcp_server)
    scripted_llm.script(tool_calls(call("erp__sleep", {"seconds": 30}, id="s")), text("never"))
    run = asyncio.create_task(run_agent(world, make_llm, "Sleep"))
    for _ in range(200):
        if mcp_server.calls_of("sleep"):
            break
        await asyncio.sleep(0.05)
    assert mcp_server.calls_of("sleep")
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    (log,) = await _logs()
    assert log.tool_call_id == "s" and log.status == "error" and log.mcp_method == "tools/call"
    # the pool still works for the next call
    scripted_llm.reset()  # the cancelled run's unused reply goes
    scripted_llm.script(tool_calls(call("erp__lookup_order", {"order_id": "1"})), text("ok"))
    result = await run_agent(world, make_llm, "Lookup")
    assert result.tool_calls[0].outcome == "ok"
