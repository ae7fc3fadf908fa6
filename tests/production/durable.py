"""What the multi-process tests of durable runs share: a server of their own with its settings, a
conversation asking for a payment that waits for approval, a decision through the REST API, the sweeper
as ``manage.py sweep_runs`` runs it, and reads of the run and its stream from outside."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection

from platform_core.wiring.deploy.services import postgres_query
from platform_core.wiring.deploy.stack import ProcessGroup, daphne_spec
from tests.fakes.openai_server import ScriptedOpenAIServer, call, text, tool_calls
from tests.production.conftest import Stack
from tests.production.processes import free_port, run_checked
from tests.production.ws_client import is_approval, ws_frames_until, ws_open, ws_send

PAYMENT = {"amount": 60000, "currency": "CNY"}
# A lease lapses 2 s after its process stops renewing it, and an approval is held in process for 1 s
# before the run is parked.
SHORT_LEASES = {
    "RUN_LEASE_SECONDS": "2",
    "RUN_LEASE_RENEW_SECONDS": "0.5",
    "APPROVAL_INPROCESS_HOLD_SECONDS": "1",
}

PAID = "The payment of 60,000 CNY was approved and has been made."


@dataclass
class PaymentAsked:
    """A conversation whose agent asked to pay ``PAYMENT`` and waits for approval: the requester's socket
    on the server it runs on, its frames up to the pending approval, and the ERP's payments before."""

    conversation: str
    ws: ClientConnection
    frames: list[dict[str, Any]]
    payments_before: int

    @property
    def approval_id(self) -> str:
        return str(self.frames[-1]["data"]["approval_id"])


async def ask_to_pay(
    stack: Stack, base_url: str, call_id: str, scripted_llm: ScriptedOpenAIServer, prod_erp, final: str = PAID
) -> PaymentAsked:
    """A new conversation on ``base_url`` whose agent asks to pay 60,000 CNY (tool call ``call_id``) and,
    once approved, answers ``final``; returned at its pending approval."""
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id=call_id)), text("Paid."), text(final)
    )
    payments_before = len(prod_erp.requests_to("/payments"))
    conversation = await stack.new_conversation()
    ws = await ws_open(base_url, conversation, stack.world["requester_token"])
    await ws_send(ws, {"type": "message", "content": "Pay 60000 CNY to the supplier"})
    frames = await ws_frames_until(ws, is_approval("pending"))
    return PaymentAsked(conversation, ws, frames, payments_before)


async def follow_on_b(stack: Stack, conversation: str, after_seq: int) -> ClientConnection:
    """A requester's socket on server B, resuming the conversation's stream after ``after_seq``."""
    ws = await ws_open(stack.b, conversation, stack.world["requester_token"])
    await ws_send(ws, {"type": "resume", "after_seq": after_seq})
    return ws


async def approve_through(stack: Stack, base_url: str, approval_id: str, comment: str | None = None) -> None:
    """The approver approves ``approval_id`` (with ``comment``) through the REST API of the server at
    ``base_url``."""
    decision = {"decision": "approve"} if comment is None else {"decision": "approve", "comment": comment}
    async with stack.api(base_url, stack.world["approver_token"]) as api:
        response = await api.post(f"/approvals/{approval_id}/decide/", json=decision)
    assert response.status_code == 200, response.text


@contextmanager
def extra_server(
    stack: Stack, log_dir: Path, settings: Mapping[str, str]
) -> Iterator[tuple[str, ProcessGroup]]:
    """A third daphne process with ``settings`` on top of the stack's (its own group: killing it leaves
    A and B alone)."""
    group = ProcessGroup(env={**stack.group.env, **settings}, log_dir=log_dir)
    try:
        process = group.start(daphne_spec(free_port(), name="daphne-c"))
        group.wait_ready(timeout=60)
        yield str(process.spec.base_url), group
    finally:
        group.stop()


def sweep(stack: Stack) -> dict[str, Any]:
    out = run_checked([sys.executable, "manage.py", "sweep_runs"], stack.group.env, "sweep_runs")
    return json.loads(out.strip().splitlines()[-1])


def run_row(stack: Stack, conversation: str) -> dict[str, Any]:
    rows = postgres_query(
        stack.database_url,
        "SELECT id, status, resumes, lease_owner FROM agents_run WHERE conversation_id = %s "
        "ORDER BY started_at DESC LIMIT 1",
        (conversation,),
    )
    assert rows, "the conversation has no run"
    run_id, status, resumes, owner = rows[0]
    return {"id": str(run_id), "status": status, "resumes": resumes, "lease_owner": owner}


async def until_status(stack: Stack, conversation: str, status: str, within: float = 20.0) -> dict[str, Any]:
    """The run once it has reached ``status`` (its process tells the test nothing: poll the database)."""
    deadline = time.monotonic() + within
    while True:
        row = await asyncio.to_thread(run_row, stack, conversation)
        if row["status"] == status:
            return row
        assert time.monotonic() < deadline, f"the run is still {row['status']}, not {status}"
        await asyncio.sleep(0.1)


async def events(stack: Stack, base_url: str, conversation: str) -> list[dict[str, Any]]:
    async with stack.api(base_url, stack.world["requester_token"]) as api:
        response = await api.get(
            f"/conversations/{conversation}/events/", params={"after_seq": 0, "limit": 500}
        )
    assert response.status_code == 200, response.text
    return response.json()["results"]


async def call_logs(stack: Stack, conversation: str) -> list[tuple[str, str]]:
    async with stack.api(stack.b, stack.world["requester_token"]) as api:
        response = await api.get("/call-logs/", params={"conversation_id": conversation})
    assert response.status_code == 200, response.text
    return [(log["tool_call_id"], log["status"]) for log in response.json()["results"]]


def assert_every_event_once(frames: list[dict[str, Any]]) -> None:
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
