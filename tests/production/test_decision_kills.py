"""A decision on an approval with a process killed at each step of it: the run still resumes, its stream
ends once, and the approved payment is made exactly once.

One wake-up path and two fallbacks (docs/architecture/life-of-a-run.md, "Waking a run that waits on a
human"): the transaction that closes a request sends ``approval_closed`` once it commits, which queues a
parked run's resumption or tells the server holding the call. Each test kills a process at one step of
that path. A process killed right after a commit leaves exactly that commit behind, so such a kill is
made here by committing the same rows over SQL with no process left to act on them:

- the decider dies after its commit, before its wake-up, while a server holds the call: the holder's
  gate re-reads the request (``APPROVAL_RECHECK_SECONDS``);
- the same, the run parked: the sweeper queues its resumption for the worker;
- the worker dies right after it claimed the parked run: its lease lapses, the sweeper interrupts the
  run, and the user resumes it on another server;
- the server holding the call is killed, then the decision lands through another server: the sweeper
  interrupts the run and the user resumes it there, where the gate finds its request approved.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection

from platform_core.wiring.deploy.services import postgres_query
from tests.production.conftest import Stack
from tests.production.durable import (
    SHORT_LEASES,
    PaymentAsked,
    approve_through,
    ask_to_pay,
    assert_every_event_once,
    call_logs,
    extra_server,
    follow_on_b,
    run_row,
    sweep,
    until_status,
)
from tests.production.ws_client import is_done, ws_frames_until, ws_send

# A call held in process for longer than any of these tests, its request re-read every second.
LONG_HOLD = {"APPROVAL_INPROCESS_HOLD_SECONDS": "60", "APPROVAL_RECHECK_SECONDS": "1"}
WITHIN = 30.0


def _decide_over_sql(stack: Stack, approval_id: str, *, seconds_ago: int = 0) -> None:
    """What a decider leaves behind when it dies right after its commit: the request approved, and no
    wake-up sent."""
    changed = postgres_query(
        stack.database_url,
        "UPDATE hooks_approvalrequest SET status = 'approved', decided_via = 'web', "
        "decided_at = now() - make_interval(secs => %s) WHERE id = %s AND status = 'pending' RETURNING id",
        (seconds_ago, approval_id),
    )
    assert changed, "the request was not pending"


def _claim_as_a_dead_worker(stack: Stack, run_id: str) -> None:
    """What a worker leaves behind when it dies right after claiming a parked run: the run running under
    its lease, which nobody renews."""
    claimed = postgres_query(
        stack.database_url,
        "UPDATE agents_run SET status = 'running', lease_owner = 'worker-killed#1', "
        "lease_expires_at = now() - interval '1 second', parked_on = NULL, resumes = resumes + 1 "
        "WHERE id = %s AND status = 'parked' RETURNING id",
        (run_id,),
    )
    assert claimed, "the run was not parked"


async def _parked_and_followed_on_b(
    stack: Stack, base_url: str, call_id: str, scripted_llm, prod_erp
) -> tuple[PaymentAsked, dict[str, Any], ClientConnection]:
    """A payment asked for on ``base_url`` whose run has been parked, its run row, and B's socket
    following its stream."""
    asked = await ask_to_pay(stack, base_url, call_id, scripted_llm, prod_erp)
    parked = await until_status(stack, asked.conversation, "parked")
    return asked, parked, await follow_on_b(stack, asked.conversation, asked.frames[-1]["seq"])


async def _interrupted_then_resumed(stack: Stack, on_b: ClientConnection) -> list[dict]:
    """Sweep until the run is interrupted, then resume it from B's socket: B's frames up to its end."""
    await _sweep_until(stack, "interrupted")
    frames = await ws_frames_until(on_b, lambda f: f["data"].get("code") == "run_interrupted")
    await ws_send(on_b, {"type": "resume_run"})
    return frames + await ws_frames_until(on_b, is_done)


async def _sweep_until(stack: Stack, key: str) -> None:
    started = time.monotonic()
    while not (await asyncio.to_thread(sweep, stack))[key]:
        assert time.monotonic() - started < WITHIN, f"the sweeper never {key} the run"
        await asyncio.sleep(0.5)


async def _assert_paid_once(
    stack: Stack, asked: PaymentAsked, call_id: str, frames: list[dict], prod_erp, resumes: int
) -> None:
    assert_every_event_once(frames)
    assert [f["event"] for f in frames].count("done") == 1 and frames[-1]["data"]["cancelled"] is False
    assert [f["data"]["status"] for f in frames if f["event"] == "approval"][-1] == "approved"
    assert len(prod_erp.requests_to("/payments")) == asked.payments_before + 1
    assert await call_logs(stack, asked.conversation) == [(call_id, "ok")]
    finished = await asyncio.to_thread(run_row, stack, asked.conversation)
    assert finished["status"] == "done" and finished["resumes"] == resumes


async def test_a_decider_killed_before_its_wake_up_still_releases_the_call_its_server_holds(
    stack: Stack, tmp_path: Path, scripted_llm, prod_erp
):
    with extra_server(stack, tmp_path / "server-c", LONG_HOLD) as (c, _):
        asked = await ask_to_pay(stack, c, "pay-held", scripted_llm, prod_erp)

        await asyncio.to_thread(_decide_over_sql, stack, asked.approval_id)

        seen = asked.frames + await ws_frames_until(asked.ws, is_done)
        await _assert_paid_once(stack, asked, "pay-held", seen, prod_erp, resumes=0)
        await asked.ws.close()


async def test_a_decider_killed_before_its_wake_up_still_resumes_the_parked_run_through_the_sweeper(
    stack: Stack, tmp_path: Path, scripted_llm, prod_erp
):
    with extra_server(stack, tmp_path / "server-c", SHORT_LEASES) as (c, _):
        asked, _, on_b = await _parked_and_followed_on_b(stack, c, "pay-parked", scripted_llm, prod_erp)

        # decided a while ago (longer than the sweeper waits for the wake-up it expects)
        await asyncio.to_thread(_decide_over_sql, stack, asked.approval_id, seconds_ago=60)
        await _sweep_until(stack, "requeued")

        seen = asked.frames + await ws_frames_until(on_b, is_done)
        await _assert_paid_once(stack, asked, "pay-parked", seen, prod_erp, resumes=1)
        await on_b.close()
        await asked.ws.close()


async def test_a_worker_killed_right_after_claiming_the_run_leaves_it_to_be_resumed_elsewhere(
    stack: Stack, tmp_path: Path, scripted_llm, prod_erp
):
    with extra_server(stack, tmp_path / "server-c", SHORT_LEASES) as (c, _):
        asked, parked, on_b = await _parked_and_followed_on_b(stack, c, "pay-claimed", scripted_llm, prod_erp)

        await asyncio.to_thread(_decide_over_sql, stack, asked.approval_id)
        await asyncio.to_thread(_claim_as_a_dead_worker, stack, parked["id"])
        seen = asked.frames + await _interrupted_then_resumed(stack, on_b)
        await _assert_paid_once(stack, asked, "pay-claimed", seen, prod_erp, resumes=2)
        await on_b.close()
        await asked.ws.close()


async def test_a_server_killed_while_it_holds_the_call_leaves_the_decided_run_to_be_resumed_elsewhere(
    stack: Stack, tmp_path: Path, scripted_llm, prod_erp
):
    with extra_server(stack, tmp_path / "server-c", {**SHORT_LEASES, **LONG_HOLD}) as (c, group):
        asked = await ask_to_pay(stack, c, "pay-orphaned", scripted_llm, prod_erp)
        on_b = await follow_on_b(stack, asked.conversation, asked.frames[-1]["seq"])

        group.kill("daphne-c")
        await approve_through(stack, stack.b, asked.approval_id)
        seen = asked.frames + await _interrupted_then_resumed(stack, on_b)
        await _assert_paid_once(stack, asked, "pay-orphaned", seen, prod_erp, resumes=1)
        await on_b.close()
