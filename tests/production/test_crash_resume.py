"""Durable runs across real processes: ``kill -9`` of the daphne process running a run, and an approval
decided long after its run was parked, resumed by the Celery worker (issue 8's crash acceptance test).

Each test starts a third daphne process ("C", on the session's PostgreSQL and Redis) with short leases
and a short in-process approval hold, runs the conversation there, and follows it from a client of
server B. The sweeper runs as ``manage.py sweep_runs`` (what the beat task runs every 10 seconds).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from platform_core.wiring.deploy.services import postgres_query
from platform_core.wiring.deploy.stack import ROOT, ProcessGroup, daphne_spec
from tests.fakes.openai_server import call, text, tool_calls
from tests.production.conftest import Stack
from tests.production.ws_client import is_approval, is_done, ws_frames_until, ws_open, ws_send

PAYMENT = {"amount": 60000, "currency": "CNY"}
# Server C's durable-run settings: a lease lapses 2 s after its process stops renewing it, and an
# approval is held in process for 1 s before the run is parked.
SHORT_LEASES = {
    "RUN_LEASE_SECONDS": "2",
    "RUN_LEASE_RENEW_SECONDS": "0.5",
    "APPROVAL_INPROCESS_HOLD_SECONDS": "1",
}
INTERRUPT_WITHIN = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server_c(stack: Stack, tmp_path: Path) -> Iterator[tuple[str, ProcessGroup]]:
    """A third daphne process with short leases (its own group: killing it leaves A and B alone)."""
    group = ProcessGroup(env={**stack.group.env, **SHORT_LEASES}, log_dir=tmp_path / "server-c")
    try:
        process = group.start(daphne_spec(_free_port(), name="daphne-c"))
        group.wait_ready(timeout=60)
        yield str(process.spec.base_url), group
    finally:
        group.stop()


def _sweep(stack: Stack) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "manage.py", "sweep_runs"],
        cwd=ROOT,
        env=dict(stack.group.env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _run_row(stack: Stack, conversation: str) -> dict[str, Any]:
    rows = postgres_query(
        stack.database_url,
        "SELECT id, status, resumes, lease_owner FROM agents_run WHERE conversation_id = %s "
        "ORDER BY started_at DESC LIMIT 1",
        (conversation,),
    )
    assert rows, "the conversation has no run"
    run_id, status, resumes, owner = rows[0]
    return {"id": str(run_id), "status": status, "resumes": resumes, "lease_owner": owner}


async def _until_status(stack: Stack, conversation: str, status: str, within: float = 20.0) -> dict[str, Any]:
    """The run once it has reached ``status`` (its process tells the test nothing: poll the database)."""
    deadline = time.monotonic() + within
    while True:
        row = await asyncio.to_thread(_run_row, stack, conversation)
        if row["status"] == status:
            return row
        assert time.monotonic() < deadline, f"the run is still {row['status']}, not {status}"
        await asyncio.sleep(0.1)


async def _events(stack: Stack, base_url: str, conversation: str) -> list[dict[str, Any]]:
    async with stack.api(base_url, stack.world["requester_token"]) as api:
        response = await api.get(
            f"/conversations/{conversation}/events/", params={"after_seq": 0, "limit": 500}
        )
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def _call_logs(stack: Stack, conversation: str) -> list[tuple[str, str]]:
    async with stack.api(stack.b, stack.world["requester_token"]) as api:
        response = await api.get("/call-logs/", params={"conversation_id": conversation})
    assert response.status_code == 200, response.text
    return [(log["tool_call_id"], log["status"]) for log in response.json()["results"]]


def _assert_every_event_once(frames: list[dict[str, Any]]) -> None:
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))


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
    while not (await asyncio.to_thread(_sweep, stack))["interrupted"]:
        assert time.monotonic() - killed_at < INTERRUPT_WITHIN, "the run was never interrupted"
        await asyncio.sleep(0.5)
    seen += await ws_frames_until(on_b, lambda f: f["data"].get("code") == "run_interrupted")
    assert time.monotonic() - killed_at < INTERRUPT_WITHIN
    interrupted = await asyncio.to_thread(_run_row, stack, conversation)
    assert interrupted["status"] == "interrupted" and interrupted["lease_owner"] == ""

    # and when the user resumes it through server B, it continues from its checkpoint there
    await ws_send(on_b, {"type": "resume_run"})
    seen += await ws_frames_until(on_b, is_done)

    _assert_every_event_once(seen)
    assert {f["run_id"] for f in seen} == {interrupted["id"]}
    assert [f["event"] for f in seen].count("done") == 1 and seen[-1]["data"]["cancelled"] is False
    resumed_at = next(i for i, f in enumerate(seen) if f["data"].get("code") == "run_interrupted")
    thinking = [f["data"]["iteration"] for f in seen[resumed_at:] if f["data"].get("type") == "thinking"]
    assert thinking and thinking[0] == 2  # from the checkpoint, not from the start
    assert len(prod_erp.requests_to("/payments")) == listed + 1  # the listing was not repeated
    assert await _call_logs(stack, conversation) == [("list-1", "ok")]
    assert await _events(stack, stack.a, conversation) == seen
    finished = await asyncio.to_thread(_run_row, stack, conversation)
    assert finished["status"] == "done" and finished["resumes"] == 1
    await on_b.close()
    await on_c.close()


async def test_an_approval_decided_after_its_run_was_parked_resumes_it_in_the_celery_worker(
    stack: Stack, server_c: tuple[str, ProcessGroup], scripted_llm, prod_erp
):
    # given a run on server C whose payment approval outlasted the in-process hold: it is parked
    c, _ = server_c
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id="pay-parked")),
        text("Paid."),
        text("The payment of 60,000 CNY was approved and has been made."),
    )
    payments = len(prod_erp.requests_to("/payments"))
    conversation = await stack.new_conversation()
    token = stack.world["requester_token"]
    on_c = await ws_open(c, conversation, token)
    await ws_send(on_c, {"type": "message", "content": "Pay 60000 CNY to the supplier"})
    seen = await ws_frames_until(on_c, is_approval("pending"))
    pending = seen[-1]["data"]
    parked = await _until_status(stack, conversation, "parked")
    assert parked["lease_owner"] == ""

    # when the approver approves through server B (no process holds the run any more)
    on_b = await ws_open(stack.b, conversation, token)
    await ws_send(on_b, {"type": "resume", "after_seq": seen[-1]["seq"]})
    async with stack.api(stack.b, stack.world["approver_token"]) as api:
        response = await api.post(
            f"/approvals/{pending['approval_id']}/decide/", json={"decision": "approve", "comment": "ok"}
        )
    assert response.status_code == 200, response.text

    # then the worker resumes the run from its checkpoint: the payment is made once and the stream ends
    rest = await ws_frames_until(on_b, is_done)
    seen += rest
    _assert_every_event_once(seen)
    assert [f["data"]["status"] for f in rest if f["event"] == "approval"] == ["approved"]
    assert rest[-1]["data"]["cancelled"] is False
    assert len(prod_erp.requests_to("/payments")) == payments + 1
    assert await _call_logs(stack, conversation) == [("pay-parked", "ok")]
    finished = await asyncio.to_thread(_run_row, stack, conversation)
    assert finished["status"] == "done" and finished["resumes"] == 1
    await on_b.close()
    await on_c.close()
