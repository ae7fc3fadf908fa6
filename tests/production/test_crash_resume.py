"""Durable runs across real processes: ``kill -9`` of the daphne process running a run, and an approval
decided long after its run was parked, resumed by the Celery worker (issue 8's crash acceptance test).

Each test starts a third daphne process ("C", on the session's PostgreSQL and Redis) with short leases
and a short in-process approval hold, runs the conversation there, and follows it from a client of
server B. The sweeper runs as ``manage.py sweep_runs`` (what the beat task runs every 10 seconds).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from platform_core.wiring.deploy.stack import ProcessGroup
from tests.fakes.openai_server import call, text, tool_calls
from tests.production.conftest import Stack
from tests.production.durable import (
    SHORT_LEASES,
    approve_through,
    ask_to_pay,
    assert_every_event_once,
    call_logs,
    events,
    extra_server,
    follow_on_b,
    run_row,
    sweep,
    until_status,
)
from tests.production.ws_client import is_done, ws_frames_until, ws_open, ws_send

INTERRUPT_WITHIN = 30.0


@pytest.fixture
def server_c(stack: Stack, tmp_path: Path) -> Iterator[tuple[str, ProcessGroup]]:
    """A third daphne process with short leases (its own group: killing it leaves A and B alone)."""
    with extra_server(stack, tmp_path / "server-c", SHORT_LEASES) as server:
        yield server


async def test_kill_9_of_the_server_running_a_run_interrupts_it_and_another_server_resumes_it(
    stack: Stack, server_c: tuple[str, ProcessGroup], scripted_llm, prod_erp
):
    # given a run on server C that listed the payments and is waiting for the model
    c, group = server_c
    asked, release = threading.Event(), threading.Event()

    def held(body: dict[str, Any]):
        asked.set()
        release.wait(30)
        return text("unused: the process that asked is dead")

    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="list-1")),
        held,
        text("Nothing is due this week."),
        text("Nothing is due this week: the ERP lists no open payments for you."),
    )
    listed = len(prod_erp.requests_to("/payments"))
    conversation = await stack.new_conversation()
    token = stack.world["requester_token"]
    on_c = await ws_open(c, conversation, token)
    on_b = await ws_open(stack.b, conversation, token)
    await ws_send(on_b, {"type": "resume", "after_seq": 0})
    await ws_send(on_c, {"type": "message", "content": "Which payments are due this week?"})
    seen = await ws_frames_until(
        on_b, lambda f: f["data"].get("type") == "thinking" and f["data"].get("iteration") == 2
    )
    assert await asyncio.to_thread(asked.wait, 20)

    # when server C is killed mid-run
    group.kill("daphne-c")
    killed_at = time.monotonic()
    release.set()

    # then the sweeper marks the run interrupted and B's client is told, well within 30 s
    while not (await asyncio.to_thread(sweep, stack))["interrupted"]:
        assert time.monotonic() - killed_at < INTERRUPT_WITHIN, "the run was never interrupted"
        await asyncio.sleep(0.5)
    seen += await ws_frames_until(on_b, lambda f: f["data"].get("code") == "run_interrupted")
    assert time.monotonic() - killed_at < INTERRUPT_WITHIN
    interrupted = await asyncio.to_thread(run_row, stack, conversation)
    assert interrupted["status"] == "interrupted" and interrupted["lease_owner"] == ""

    # and when the user resumes it through server B, it continues from its checkpoint there
    await ws_send(on_b, {"type": "resume_run"})
    seen += await ws_frames_until(on_b, is_done)

    assert_every_event_once(seen)
    assert {f["run_id"] for f in seen} == {interrupted["id"]}
    assert [f["event"] for f in seen].count("done") == 1 and seen[-1]["data"]["cancelled"] is False
    resumed_at = next(i for i, f in enumerate(seen) if f["data"].get("code") == "run_interrupted")
    thinking = [f["data"]["iteration"] for f in seen[resumed_at:] if f["data"].get("type") == "thinking"]
    assert thinking and thinking[0] == 2  # from the checkpoint, not from the start
    assert len(prod_erp.requests_to("/payments")) == listed + 1  # the listing was not repeated
    assert await call_logs(stack, conversation) == [("list-1", "ok")]
    assert await events(stack, stack.a, conversation) == seen
    finished = await asyncio.to_thread(run_row, stack, conversation)
    assert finished["status"] == "done" and finished["resumes"] == 1
    await on_b.close()
    await on_c.close()


async def test_an_approval_decided_after_its_run_was_parked_resumes_it_in_the_celery_worker(
    stack: Stack, server_c: tuple[str, ProcessGroup], scripted_llm, prod_erp
):
    # given a run on server C whose payment approval outlasted the in-process hold: it is parked
    c, _ = server_c
    asked = await ask_to_pay(stack, c, "pay-parked", scripted_llm, prod_erp)
    conversation, seen = asked.conversation, asked.frames
    parked = await until_status(stack, conversation, "parked")
    assert parked["lease_owner"] == ""

    # when the approver approves through server B (no process holds the run any more)
    on_b = await follow_on_b(stack, conversation, seen[-1]["seq"])
    await approve_through(stack, stack.b, asked.approval_id, comment="ok")

    # then the worker resumes the run from its checkpoint: the payment is made once and the stream ends
    rest = await ws_frames_until(on_b, is_done)
    seen += rest
    assert_every_event_once(seen)
    assert [f["data"]["status"] for f in rest if f["event"] == "approval"] == ["approved"]
    assert rest[-1]["data"]["cancelled"] is False
    assert len(prod_erp.requests_to("/payments")) == asked.payments_before + 1
    assert await call_logs(stack, conversation) == [("pay-parked", "ok")]
    finished = await asyncio.to_thread(run_row, stack, conversation)
    assert finished["status"] == "done" and finished["resumes"] == 1
    await on_b.close()
    await asked.ws.close()
