"""Two daphne processes, one platform: runs, event streams and approvals cross server processes through
PostgreSQL and the Redis channel layer (issue 8's first acceptance test)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from tests.fakes.feishu_server import FakeFeishu
from tests.fakes.openai_server import call, text, tool_calls
from tests.production.conftest import Stack
from tests.production.durable import approve_through, ask_to_pay, call_logs, events, follow_on_b
from tests.production.world import BOSS
from tests.production.ws_client import (
    is_done,
    ws_frame,
    ws_frames_until,
    ws_open,
    ws_send,
)


def _is_answer_start(frame: dict[str, Any]) -> bool:
    return frame["event"] == "answer" and frame["data"].get("status") == "start"


def _statuses(frames: list[dict[str, Any]]) -> list[str]:
    return [f["data"]["status"] for f in frames if f["event"] == "approval"]


async def test_a_run_started_on_one_server_is_followed_and_resumed_by_a_client_of_the_other(
    stack: Stack, scripted_llm
):
    # given a run started through server A whose final answer is held back by the model
    release = threading.Event()

    def held_answer(body: dict[str, Any]):
        release.wait(30)
        return text("Nothing is due this week: the ERP lists no open payments for you.")

    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="list-1")), text("No payments are due."), held_answer
    )
    conversation = await stack.new_conversation()
    token = stack.world["requester_token"]
    on_a = await ws_open(stack.a, conversation, token)
    await ws_send(on_a, {"type": "message", "content": "Which payments are due this week?"})
    before = await ws_frames_until(on_a, _is_answer_start)

    # when a client of server B resumes from the start, drops halfway, and resumes again on B
    first_b = await follow_on_b(stack, conversation, 0)
    halfway = [await ws_frame(first_b) for _ in range(len(before) // 2)]
    await first_b.close()
    on_b = await follow_on_b(stack, conversation, halfway[-1]["seq"])
    replayed = [await ws_frame(on_b) for _ in range(len(before) - len(halfway))]
    # and only then the model answers, so the rest reaches B live from the run in A's process
    release.set()
    live_b = await ws_frames_until(on_b, is_done)
    after_a = await ws_frames_until(on_a, is_done)

    # then B saw every event of the run exactly once, in order, the same frames A saw and stored
    seen_by_b = halfway + replayed + live_b
    assert [f["seq"] for f in seen_by_b] == list(range(1, len(seen_by_b) + 1))
    assert seen_by_b == before + after_a
    assert any(f["event"] == "answer" and f["data"].get("status") == "delta" for f in live_b)
    assert live_b[-1]["data"]["cancelled"] is False
    assert await events(stack, stack.b, conversation) == seen_by_b
    for ws in (on_a, on_b):
        await ws.close()


async def test_an_approval_decided_through_the_other_servers_api_wakes_the_run_waiting_in_the_first(
    stack: Stack, scripted_llm, prod_erp
):
    # given a run on server A waiting for approval of a large payment
    asked = await ask_to_pay(stack, stack.a, "pay-web", scripted_llm, prod_erp)

    # when the approver approves through server B's REST API
    await approve_through(stack, stack.b, asked.approval_id, comment="fine")

    # then the run in A wakes (its database re-check is a minute away), pays once and finishes
    rest = await ws_frames_until(asked.ws, is_done)
    assert _statuses(rest) == ["approved"]
    approved = next(f["data"] for f in rest if f["event"] == "approval")
    assert approved["decided_by"] == stack.world["approver"] and approved["reason"] == "fine"
    assert rest[-1]["data"]["cancelled"] is False
    assert len(prod_erp.requests_to("/payments")) == asked.payments_before + 1
    assert await call_logs(stack, asked.conversation) == [("pay-web", "ok")]
    await asked.ws.close()


def _card_delivered(fake_feishu: FakeFeishu, approval_id: str) -> None:
    """Wait until the worker process has posted the approval's card to (fake) Feishu (no event
    crosses from the worker to the test, so this looks, briefly, every 50 ms)."""
    deadline = time.monotonic() + 20
    while fake_feishu.message_for(approval_id) is None:
        assert time.monotonic() < deadline, "the worker never delivered the approval card"
        time.sleep(0.05)


async def test_an_approval_clicked_on_feishu_and_called_back_to_the_other_server_wakes_the_run(
    stack: Stack, scripted_llm, prod_erp, fake_feishu: FakeFeishu
):
    # given a run on server A waiting for approval, whose card the Celery worker sent to Feishu
    final = "Your manager approved the payment of 60,000 CNY on Feishu; it has been made."
    asked = await ask_to_pay(stack, stack.a, "pay-feishu", scripted_llm, prod_erp, final=final)
    await asyncio.to_thread(_card_delivered, fake_feishu, asked.approval_id)

    # when the boss taps Approve and Feishu calls back server B
    status, reply = await fake_feishu.aclick(
        stack.feishu_callback_url(stack.b),
        operator_open_id=BOSS,
        approval_id=asked.approval_id,
        decision="approve",
    )
    assert status == 200 and reply["toast"]["type"] == "success", reply

    # then the run in A wakes, pays once and finishes
    rest = await ws_frames_until(asked.ws, is_done)
    assert _statuses(rest) == ["approved"]
    assert next(f["data"] for f in rest if f["event"] == "approval")["decided_by"] == BOSS
    assert rest[-1]["data"]["cancelled"] is False
    assert len(prod_erp.requests_to("/payments")) == asked.payments_before + 1
    assert await call_logs(stack, asked.conversation) == [("pay-feishu", "ok")]
    await asked.ws.close()
