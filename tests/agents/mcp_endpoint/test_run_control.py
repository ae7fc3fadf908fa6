"""A run started over MCP that waits for an approval says so in its progress (and continues once the
approver decides), and an MCP client that cancels its call cancels the run."""

from __future__ import annotations

import asyncio

import anyio
import httpx2
import pytest
from channels.db import database_sync_to_async

from agents.models import Run
from hooks.models import ApprovalRequest
from platform_core.identity.api_keys.keys import api_token_issue
from tests.agents.mcp_endpoint.live import call_agent_until, mcp_session
from tests.agents.mcp_endpoint.payments import payments_over_mcp
from tests.fakes.openai_replies import call, hang, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


def _world(llm_base_url: str, erp_base_url: str) -> dict[str, str]:
    world = payments_over_mcp(llm_base_url, erp_base_url)
    return {
        "url_path": world.url_path,
        "key": api_token_issue(user=world.requester, name="desktop")[1],
        "approver_key": api_token_issue(user=world.approver, name="desktop")[1],
    }


def _pending_approval_id() -> str | None:
    approval = ApprovalRequest.objects.unscoped().filter(status="pending").first()
    return None if approval is None else str(approval.pk)


async def test_an_approval_wait_is_reported_as_progress_and_the_answer_follows_the_decision(
    daphne_url, scripted_llm, erp
):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"amount": 500}, id="p1")),
        text("Paid."),
        text("The payment of 500 was made."),
    )
    messages: list[str] = []
    waiting = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        messages.append(message or "")
        if "waiting for approval by april" in (message or ""):
            waiting.set()

    async with mcp_session(daphne_url + world["url_path"], world["key"]) as session:
        async with anyio.create_task_group() as tg:
            results = []

            async def ask() -> None:
                results.append(
                    await session.call_tool(
                        "purchasing_assistant", {"question": "Pay 500"}, progress_callback=on_progress
                    )
                )

            tg.start_soon(ask)
            with anyio.fail_after(20):
                await waiting.wait()
            assert erp.requests_to("/payments") == []
            approval_id = await database_sync_to_async(_pending_approval_id)()
            async with httpx2.AsyncClient(
                base_url=f"{daphne_url}/api/v1/orgs/acme",
                headers={"Authorization": f"Bearer {world['approver_key']}"},
                trust_env=False,
            ) as api:
                decided = await api.post(f"/approvals/{approval_id}/decide/", json={"decision": "approve"})
            assert decided.status_code == 200, decided.text

    result = results[0]
    assert not result.is_error and result.content[0].text == "The payment of 500 was made."
    assert any("erp__create_payment was approved by april" in m for m in messages)
    assert len(erp.requests_to("/payments")) == 1


def _run_statuses() -> list[str]:
    return list(Run.objects.unscoped().values_list("status", flat=True))


async def test_a_client_that_cancels_its_call_cancels_the_run(daphne_url, scripted_llm, erp):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, erp.base_url)
    scripted_llm.script(hang(30))
    async with mcp_session(daphne_url + world["url_path"], world["key"]) as session:
        await call_agent_until(session, "Slow", lambda message: message.startswith("Thinking"), within=20)

    for _ in range(100):
        if await database_sync_to_async(_run_statuses)() == ["cancelled"]:
            break
        await asyncio.sleep(0.1)
    assert await database_sync_to_async(_run_statuses)() == ["cancelled"]
