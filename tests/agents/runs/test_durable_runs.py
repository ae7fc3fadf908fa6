"""Durable runs in one process: leases, checkpoints, the sweeper, resume_run, parked approvals, the ledger.

The real websocket consumer, run manager, guard rails and connector tools, the scripted LLM and a
loopback ERP; what a second process or a Celery worker would do is done by the same code in a thread.
The multi-process version (kill -9 of a daphne process) is ``tests/production/test_crash_resume.py``.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from agents import runtime
from agents.models import Message, Run, RunCheckpoint, RunEvent, RunStatus, ToolCallEntry
from agents.runs.checkpoints import run_checkpoint_load
from agents.runs.events.store import EventSink, Fence
from agents.runs.leases import lease_owner_new, process_id
from agents.runs.lifecycle import INTERRUPTED_CODE, run_finish, runs_interrupt_lapsed
from agents.runs.manager import run_manager
from agents.runs.tasks import parked_runs_requeue
from connectors.models import ConnectorCallLog
from connectors.tools import connector_tools_for_run
from hooks.models import ApprovalRequest, ApprovalStatus
from hooks.services import approval_decide
from tests.agents.factories import RunFactory
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done, next_frame
from tests.fakes.openai_server import call, hang, text, tool_calls
from tests.hooks.scenario import build_purchasing, hold_large_payments

pytestmark = pytest.mark.django_db(transaction=True)

PAYMENT = {"amount": 60000, "currency": "CNY"}


@pytest.fixture
def world(scripted_llm, erp, monkeypatch):
    """The purchasing organisation (ERP connector on the loopback service, payments over 50,000 need
    the approver), its connector tools as the runs' tools."""
    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)

    def build():
        purchasing = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=erp.base_url)
        hold_large_payments(purchasing)
        return purchasing

    return build


@pytest.fixture
def queued_resumes(monkeypatch) -> list[str]:
    """Runs whose resumption was queued for a Celery worker (the test runs the task itself)."""
    from agents.runs import tasks

    queued: list[str] = []
    monkeypatch.setattr(tasks.resume_parked_run, "delay", lambda run_id: queued.append(run_id))
    return queued


async def _lapse_lease(run: Run) -> None:
    """The run's lease lapses and names a process that is gone, so this process's renewer cannot bring it
    back (nor hold the row's lock the sweeper skips) between here and the sweep."""
    await (
        Run.objects.unscoped()
        .filter(pk=run.pk)
        .aupdate(lease_owner="dead-process", lease_expires_at=timezone.now() - timedelta(seconds=1))
    )


async def _finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def _is(event: str, **data: Any):
    return lambda f: f["event"] == event and all(f["data"].get(k) == v for k, v in data.items())


async def _open(world) -> tuple[Any, Any]:
    purchasing = await database_sync_to_async(world)()
    ws, connected, _ = await connect(purchasing.conversation.pk, await bearer_for(purchasing.requester))
    assert connected
    return purchasing, ws


def _assert_exactly_once(frames: list[dict[str, Any]]) -> None:
    seqs = [f["seq"] for f in frames]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs


async def test_a_run_is_held_by_its_process_checkpointed_as_it_goes_and_released_when_it_ends(
    world, scripted_llm, erp
):
    release = threading.Event()

    def held(body: dict[str, Any]) -> Any:
        release.wait(15)
        return text("Nothing is due.")

    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="l1")), held, text("Nothing is due this week.")
    )
    purchasing, ws = await _open(world)
    await ws.send_json_to({"type": "message", "content": "What is due?"})
    await frames_until(ws, _is("step", type="thinking", status="start", iteration=2))

    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    assert run.status == RunStatus.RUNNING and run.lease_owner.startswith(process_id())
    assert run.lease_expires_at > timezone.now()
    checkpoint = await database_sync_to_async(run_checkpoint_load)(run_id=run.pk)
    assert [m["role"] for m in checkpoint["messages"]] == ["system", "user", "assistant", "tool"]
    assert [r["id"] for r in checkpoint["records"]] == ["l1"]
    assert (checkpoint["stage"], checkpoint["iteration"]) == ("model", 1)

    release.set()
    await frames_until_done(ws)
    await _finish_runs()
    run = await Run.objects.unscoped().aget(pk=run.pk)
    assert run.status == RunStatus.DONE and run.lease_owner == "" and run.lease_expires_at is None
    assert run.checkpoint["stage"] == "answer" and run.checkpoint_seq > checkpoint["seq"]
    assert await RunCheckpoint.objects.filter(run=run).acount() == 0  # a finished run never resumes
    entry = await ToolCallEntry.objects.aget(run=run)
    assert (entry.tool_call_id, entry.status, entry.outcome) == ("l1", "finished", "ok")
    await ws.disconnect()


async def test_the_sweeper_interrupts_only_runs_whose_lease_lapsed_and_tells_their_chats(world):
    purchasing = await database_sync_to_async(world)()
    now = timezone.now()

    def runs() -> tuple[Run, Run]:
        lapsed = RunFactory(
            conversation=purchasing.conversation,
            status="running",
            lease_owner="gone:1:x#1",
            lease_expires_at=now - timedelta(seconds=1),
        )
        other = RunFactory(
            conversation__organization=purchasing.org,
            conversation__agent=purchasing.agent,
            conversation__user=purchasing.requester,
            status="running",
            lease_owner="alive:2:y#2",
            lease_expires_at=now + timedelta(seconds=10),
        )
        return lapsed, other

    lapsed, alive = await database_sync_to_async(runs)()
    interrupted = await database_sync_to_async(runs_interrupt_lapsed)()

    assert interrupted == [lapsed.pk]
    lapsed = await Run.objects.unscoped().aget(pk=lapsed.pk)
    assert lapsed.status == RunStatus.INTERRUPTED and lapsed.lease_owner == ""
    assert (await Run.objects.unscoped().aget(pk=alive.pk)).status == RunStatus.RUNNING
    event = await RunEvent.objects.aget(run=lapsed)
    assert event.event == "error" and event.data["code"] == INTERRUPTED_CODE and event.data["resumable"]


async def test_a_process_that_lost_a_run_writes_nothing_more_to_it(world):
    purchasing = await database_sync_to_async(world)()
    run = await database_sync_to_async(RunFactory)(
        conversation=purchasing.conversation, status="running", lease_owner="elsewhere#1"
    )
    lost = threading.Event()
    sink = EventSink(
        conversation_id=purchasing.conversation.pk,
        run_id=run.pk,
        first_seq=1,
        fence=Fence("here#2", 15),
        on_lease_lost=lost.set,
    )
    sink.emit("step", {"type": "thinking", "status": "start", "iteration": 1})
    await sink.close()

    assert lost.is_set() and sink.lease_lost
    assert await RunEvent.objects.filter(run=run).acount() == 0
    assert (
        await database_sync_to_async(run_finish)(run_id=run.pk, status="done", lease_owner="here#2") is False
    )
    assert (await Run.objects.unscoped().aget(pk=run.pk)).status == RunStatus.RUNNING


async def test_a_run_interrupted_by_the_sweeper_resumes_from_its_checkpoint_without_repeating_a_call(
    world, scripted_llm, erp, settings
):
    # given a run that listed the payments, then lost its process while the model was thinking
    settings.RUN_LEASE_RENEW_SECONDS = 0.05
    scripted_llm.script(
        tool_calls(call("erp__list_payments", {}, id="l1")),
        hang(30),
        text("Nothing is due."),
        text("Nothing is due this week."),
    )
    purchasing, ws = await _open(world)
    await ws.send_json_to({"type": "message", "content": "What is due?"})
    before = await frames_until(ws, _is("step", type="thinking", status="start", iteration=2))
    await scripted_llm.until_received(2)  # else the resumed run's request could take the hang
    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    await _lapse_lease(run)

    # when the sweeper interrupts it (the process's own attempt notices and stops)
    assert await database_sync_to_async(runs_interrupt_lapsed)() == [run.pk]
    interrupted = await frames_until(ws, _is("error", code=INTERRUPTED_CODE))
    await _finish_runs()
    assert (await Run.objects.unscoped().aget(pk=run.pk)).status == RunStatus.INTERRUPTED

    # and the user resumes it
    await ws.send_json_to({"type": "resume_run"})
    after = await frames_until_done(ws)
    await _finish_runs()

    # then it continued from its checkpoint: one ERP call in all, every event once, one done
    frames = before + interrupted + after
    _assert_exactly_once(frames)
    assert {f["run_id"] for f in frames} == {str(run.pk)}
    assert [f["event"] for f in frames].count("done") == 1 and not after[-1]["data"]["cancelled"]
    assert len(erp.requests_to("/payments")) == 1
    resumed_thinking = [
        f["data"]["iteration"] for f in after if _is("step", type="thinking", status="start")(f)
    ]
    assert resumed_thinking == [2]
    run = await Run.objects.unscoped().aget(pk=run.pk)
    assert run.status == RunStatus.DONE and run.resumes == 1 and run.answer == "Nothing is due this week."
    assert await RunEvent.objects.filter(run=run).acount() == frames[-1]["seq"]
    await ws.disconnect()


async def test_resume_run_without_an_interrupted_run_is_an_error_and_the_socket_stays_open(
    world, scripted_llm
):
    purchasing, ws = await _open(world)
    await ws.send_json_to({"type": "resume_run"})
    frame = await next_frame(ws)
    assert frame["event"] == "error" and frame["data"]["code"] == "nothing_to_resume"
    await ws.send_json_to({"type": "resume_run", "run_id": 7})
    assert (await next_frame(ws))["data"]["code"] == "bad_frame"
    await ws.disconnect()


async def _park(world, scripted_llm, settings):
    """A run parked on the approval of a 60,000 CNY payment (hold 0), and the socket that saw it."""
    settings.APPROVAL_INPROCESS_HOLD_SECONDS = 0
    scripted_llm.script(
        tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")),
        text("Paid."),
        text("The payment of 60,000 CNY was approved and has been made."),
    )
    purchasing, ws = await _open(world)
    await ws.send_json_to({"type": "message", "content": "Pay 60000 CNY to the supplier"})
    frames = await frames_until(ws, _is("approval", status="pending"))
    await _finish_runs()
    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    return purchasing, ws, frames, run


async def test_an_approval_longer_than_the_hold_parks_the_run_and_its_decision_resumes_it_in_a_worker(
    world, scripted_llm, erp, settings, queued_resumes
):
    from agents.runs.tasks import resume_parked_run

    # given a run parked on a pending approval: no task holds it, its conversation stays its own
    purchasing, ws, before, run = await _park(world, scripted_llm, settings)
    approval = await ApprovalRequest.objects.unscoped().aget(run_id=run.pk)
    assert run.status == RunStatus.PARKED and run.parked_on == approval.pk and run.lease_owner == ""
    assert run.pk not in run_manager.runs and erp.requests_to("/payments") == []
    assert await asyncio.to_thread(resume_parked_run, str(run.pk)) == "still waiting"
    await ws.disconnect()

    # when the approver approves (hours later, from anywhere): the resumption is queued for a worker
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="approve", via="web", actor=purchasing.approver
    )
    assert queued_resumes == [str(run.pk)]
    assert await asyncio.to_thread(resume_parked_run, str(run.pk)) == "resumed"
    assert await asyncio.to_thread(resume_parked_run, str(run.pk)) == "not parked"  # a duplicate

    # then the approved call ran exactly once and the same stream went on to the answer
    assert [r.json() for r in erp.requests_to("/payments")] == [PAYMENT]
    ws, _, _ = await connect(purchasing.conversation.pk, await bearer_for(purchasing.requester))
    await ws.send_json_to({"type": "resume", "after_seq": before[-1]["seq"]})
    after = await frames_until_done(ws)
    _assert_exactly_once(before + after)
    assert [f["data"]["status"] for f in after if f["event"] == "approval"] == ["approved"]
    assert not [f for f in after if _is("step", type="iteration", status="start")(f)]  # shown once
    done = [f["data"] for f in after if _is("step", type="iteration", status="done")(f)]
    assert [(d["tool_call_id"], d["outcome"]) for d in done] == [("pay-1", "ok")]
    run = await Run.objects.unscoped().aget(pk=run.pk)
    assert run.status == RunStatus.DONE and run.answer.startswith("The payment of 60,000 CNY")
    assert await ApprovalRequest.objects.unscoped().filter(run_id=run.pk).acount() == 1
    logs = [(log.tool_call_id, log.status) async for log in ConnectorCallLog.objects.unscoped().all()]
    assert logs == [("pay-1", "ok")]
    await ws.disconnect()


async def test_a_decision_on_a_held_call_wakes_the_process_holding_it_and_queues_no_worker(
    world, scripted_llm, erp, settings, queued_resumes
):
    # given a call held in this process's gate for longer than the test, and a database re-read too
    # rare to be what wakes it
    settings.APPROVAL_INPROCESS_HOLD_SECONDS = 60
    settings.APPROVAL_RECHECK_SECONDS = 60
    scripted_llm.script(tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")), text("Paid."))
    purchasing, ws = await _open(world)
    await ws.send_json_to({"type": "message", "content": "Pay 60000 CNY to the supplier"})
    await frames_until(ws, _is("approval", status="pending"))

    # when the approver approves
    approval = await ApprovalRequest.objects.unscoped().aget(conversation_id=purchasing.conversation.pk)
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="approve", via="web", actor=purchasing.approver
    )

    # then the holding gate was told at once: the run ends here, never parked, no worker queued
    frames = await asyncio.wait_for(frames_until_done(ws), 20)
    assert [f["data"]["status"] for f in frames if f["event"] == "approval"] == ["approved"]
    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    assert run.status == RunStatus.DONE and run.resumes == 0 and queued_resumes == []
    assert [r.json() for r in erp.requests_to("/payments")] == [PAYMENT]
    await ws.disconnect()


async def test_a_decision_landing_while_the_run_parks_resumes_it_once_where_it_parked(
    world, scripted_llm, erp, settings, queued_resumes, monkeypatch
):
    from agents.runs import manager as manager_module

    # given a run that lets go of its held call (hold 0), and a decision committed just before its
    # parking does: the decision's wake-up finds the run still running and nobody holding the call
    settings.APPROVAL_INPROCESS_HOLD_SECONDS = 0
    scripted_llm.script(tool_calls(call("erp__create_payment", PAYMENT, id="pay-1")), text("Paid."))
    purchasing, ws = await _open(world)
    parking = manager_module.run_park

    def decided_then_parked(*, run_id, owner, approval_id):
        approval = ApprovalRequest.objects.unscoped().get(pk=approval_id)
        approval_decide(approval=approval, decision="approve", via="web", actor=purchasing.approver)
        return parking(run_id=run_id, owner=owner, approval_id=approval_id)

    monkeypatch.setattr(manager_module, "run_park", decided_then_parked)
    await ws.send_json_to({"type": "message", "content": "Pay 60000 CNY to the supplier"})

    # when the run parks
    frames = await asyncio.wait_for(frames_until_done(ws), 20)
    await _finish_runs()

    # then this process claimed it back and finished it: the payment made once, no worker needed
    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    assert run.status == RunStatus.DONE and run.resumes == 1 and queued_resumes == []
    assert [r.json() for r in erp.requests_to("/payments")] == [PAYMENT]
    assert [f["data"]["status"] for f in frames if f["event"] == "approval"] == ["pending", "approved"]
    await ws.disconnect()


async def test_a_message_sent_to_a_parked_run_is_taken_in_when_it_resumes(
    world, scripted_llm, erp, settings, queued_resumes
):
    from agents.runs.tasks import resume_parked_run

    purchasing, ws, _, run = await _park(world, scripted_llm, settings)
    await ws.send_json_to({"type": "message", "content": "Use the EUR account instead if possible."})
    await ws.disconnect()
    message = await Message.objects.aget(run=run, injected=True)
    assert message.content.startswith("Use the EUR account")

    approval = await ApprovalRequest.objects.unscoped().aget(run_id=run.pk)
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="approve", via="web", actor=purchasing.approver
    )
    await asyncio.to_thread(resume_parked_run, str(run.pk))

    injected = [e.data async for e in RunEvent.objects.filter(run=run, event="inject")]
    assert injected == [{"type": "inject", "content": "Use the EUR account instead if possible."}]
    assert "Use the EUR account" in str(scripted_llm.requests[1]["messages"])


async def test_cancelling_a_parked_run_cancels_its_approval_and_ends_its_stream(
    world, scripted_llm, erp, settings, queued_resumes
):
    purchasing, ws, _, run = await _park(world, scripted_llm, settings)
    await ws.send_json_to({"type": "cancel"})
    rest = await frames_until_done(ws)

    assert [f["data"]["status"] for f in rest if f["event"] == "approval"] == ["cancelled"]
    assert rest[-1]["data"]["cancelled"] is True
    assert (await Run.objects.unscoped().aget(pk=run.pk)).status == RunStatus.CANCELLED
    assert (await ApprovalRequest.objects.unscoped().aget(run_id=run.pk)).status == ApprovalStatus.CANCELLED
    assert queued_resumes == [] and erp.requests_to("/payments") == []
    await ws.disconnect()


async def test_the_sweeper_queues_again_a_parked_run_whose_decision_was_not_acted_on(
    world, scripted_llm, erp, settings, queued_resumes
):
    purchasing, ws, _, run = await _park(world, scripted_llm, settings)
    await ws.disconnect()
    long_ago = timezone.now() - timedelta(minutes=5)
    await (
        ApprovalRequest.objects.unscoped()
        .filter(run_id=run.pk)
        .aupdate(status="approved", decided_at=long_ago)
    )

    assert await database_sync_to_async(parked_runs_requeue)() == 1
    assert queued_resumes == [str(run.pk)]


async def test_a_new_run_makes_an_interrupted_run_no_longer_resumable(world, scripted_llm):
    purchasing = await database_sync_to_async(world)()
    interrupted = await database_sync_to_async(RunFactory)(
        conversation=purchasing.conversation, status="interrupted"
    )
    scripted_llm.script(text("Hello."), text("Hello!"))
    ws, _, _ = await connect(purchasing.conversation.pk, await bearer_for(purchasing.requester))
    await ws.send_json_to({"type": "message", "content": "hi"})
    await frames_until_done(ws)
    await _finish_runs()
    await ws.send_json_to({"type": "resume_run", "run_id": str(interrupted.pk)})
    assert (await next_frame(ws))["data"]["code"] == "nothing_to_resume"
    await ws.disconnect()


def test_every_attempt_at_a_run_has_a_lease_owner_of_its_own():
    first, second = lease_owner_new(), lease_owner_new()
    assert first != second and first.startswith(process_id()) and second.startswith(process_id())


async def test_checkpoint_rows_before_a_whole_state_checkpoint_are_dropped(world):
    purchasing = await database_sync_to_async(world)()
    run = await database_sync_to_async(RunFactory)(
        conversation=purchasing.conversation, status="running", lease_owner="me#1"
    )
    sink = EventSink(
        conversation_id=purchasing.conversation.pk, run_id=run.pk, first_seq=1, fence=Fence("me#1", 15)
    )

    class Delta:
        def __init__(self, seq: int, reset: bool) -> None:
            self.seq = seq
            self.reset = reset
            self.state = {"n": seq}

        def as_dict(self) -> dict[str, Any]:
            return {
                "seq": self.seq,
                "state": {"n": self.seq},
                "messages": [],
                "records": [],
                "reset": self.reset,
            }

    for seq, reset in ((1, True), (2, False)):
        await sink.checkpoint(Delta(seq, reset))
    await sink.close()
    await sink.checkpoint(Delta(3, True))
    await sink.close()
    assert [c.seq async for c in RunCheckpoint.objects.filter(run=run).order_by("seq")] == [3]
    run = await Run.objects.unscoped().aget(pk=run.pk)
    assert run.checkpoint == {"n": 3} and run.checkpoint_seq == 3
    assert uuid.UUID(str(run.pk))


async def test_a_plan_mode_run_parks_on_a_long_approval_and_resumes_its_plan_in_a_worker(
    world, scripted_llm, erp, settings, queued_resumes
):
    from agents.runs.tasks import resume_parked_run
    from tests.agents.plan_script import PLANNER, STEP, PlanModel, step, verdict

    # given a plan whose one step asks to pay 60,000 CNY, held for approval (hold 0: parked at once)
    settings.APPROVAL_INPROCESS_HOLD_SECONDS = 0
    task = "Pay the supplier 60000 CNY"
    model = PlanModel(
        plans=[[step("1", task, tool="erp__create_payment")]],
        verdicts=[verdict(True, 1.0, "Paid.", "The supplier was paid.")],
        steps={task: [tool_calls(call("erp__create_payment", PAYMENT, id="p1")), text("Paid 60000 CNY.")]},
        answer="The supplier was paid 60,000 CNY after approval.",
    ).install(scripted_llm)
    purchasing = await database_sync_to_async(world)()
    purchasing.agent.execution_mode = "plan"
    await purchasing.agent.asave(update_fields=["execution_mode"])
    ws, _, _ = await connect(purchasing.conversation.pk, await bearer_for(purchasing.requester))
    await ws.send_json_to({"type": "message", "content": "Pay the supplier 60000 CNY"})
    before = await frames_until(ws, _is("approval", status="pending"))
    await _finish_runs()
    await ws.disconnect()
    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    assert run.status == RunStatus.PARKED and run.checkpoint["kind"] == "plan"

    # when the decision arrives and a worker resumes the run
    approval = await ApprovalRequest.objects.unscoped().aget(run_id=run.pk)
    await database_sync_to_async(approval_decide)(
        approval=approval, decision="approve", via="web", actor=purchasing.approver
    )
    assert await asyncio.to_thread(resume_parked_run, queued_resumes[0]) == "resumed"

    # then the plan went on where it was: not planned again, the step's call made once, the answer streamed
    assert model.kinds().count(PLANNER) == 1 and model.kinds().count(STEP) == 2
    assert [r.json() for r in erp.requests_to("/payments")] == [PAYMENT]
    run = await Run.objects.unscoped().aget(pk=run.pk)
    assert run.status == RunStatus.DONE and run.answer == "The supplier was paid 60,000 CNY after approval."
    after = [
        e.frame() async for e in RunEvent.objects.filter(seq__gt=before[-1]["seq"], run=run).order_by("seq")
    ]
    _assert_exactly_once(before + after)
    assert [f["data"]["status"] for f in after if f["event"] == "approval"] == ["approved"]
    assert after[-1]["event"] == "done" and not after[-1]["data"]["cancelled"]


async def test_a_turns_pending_tool_calls_are_committed_before_any_of_them_runs(
    world, scripted_llm, monkeypatch
):
    from agents.engine.tools import FunctionTool

    seen: list[dict[str, Any]] = []

    async def probe() -> str:
        run = await Run.objects.unscoped().aget(status=RunStatus.RUNNING)
        checkpoint = await database_sync_to_async(run_checkpoint_load)(run_id=run.pk)
        seen.append(
            {
                "stage": checkpoint and checkpoint["stage"],
                "pending": [c["id"] for c in (checkpoint or {}).get("pending") or ()],
            }
        )
        return "probed"

    from agents.runs.events import store as events_store

    write = events_store._write_batch

    def slow_write(*args: Any) -> None:
        time.sleep(0.2)  # a slow database: the event writer lags behind the run
        write(*args)

    purchasing = await database_sync_to_async(world)()
    monkeypatch.setattr(events_store, "_write_batch", slow_write)
    monkeypatch.setattr(
        runtime, "connector_tools_for_run", lambda blueprint: [FunctionTool("probe", "Probe.", probe)]
    )
    scripted_llm.script(tool_calls(call("probe", {}, id="pr1")), text("ok"), text("ok"))
    ws, _, _ = await connect(purchasing.conversation.pk, await bearer_for(purchasing.requester))
    await ws.send_json_to({"type": "message", "content": "probe"})
    await frames_until_done(ws)
    await _finish_runs()
    assert seen == [{"stage": "tools", "pending": ["pr1"]}]
    await ws.disconnect()


async def test_a_call_in_flight_when_its_process_died_is_not_made_again_nor_shown_twice(
    world, scripted_llm, settings, monkeypatch
):
    from agents.engine.durable.ledger import UNKNOWN_OUTCOME
    from agents.engine.tools import FunctionTool

    # given a run whose tool call is in flight when its process is declared dead
    settings.RUN_LEASE_RENEW_SECONDS = 0.05
    started = asyncio.Event()
    calls: list[str] = []

    async def transfer() -> str:
        calls.append("transfer")
        started.set()
        await asyncio.Event().wait()  # never answers: the process dies first
        return "unreachable"

    purchasing = await database_sync_to_async(world)()
    monkeypatch.setattr(
        runtime,
        "connector_tools_for_run",
        lambda blueprint: [FunctionTool("transfer", "Transfer.", transfer)],
    )
    scripted_llm.script(
        tool_calls(call("transfer", {}, id="t1")),
        text("I could not confirm the transfer."),
        text("The transfer's outcome is unknown; please check it before trying again."),
    )
    ws, _, _ = await connect(purchasing.conversation.pk, await bearer_for(purchasing.requester))
    await ws.send_json_to({"type": "message", "content": "Transfer the funds"})
    await started.wait()
    run = await Run.objects.unscoped().aget(conversation=purchasing.conversation)
    await _lapse_lease(run)
    assert await database_sync_to_async(runs_interrupt_lapsed)() == [run.pk]
    before = await frames_until(ws, _is("error", code=INTERRUPTED_CODE))
    await _finish_runs()

    # when the user resumes it
    await ws.send_json_to({"type": "resume_run"})
    after = await frames_until_done(ws)
    await _finish_runs()

    # then the call was not made again: the model was told its outcome is unknown; the chat saw it start once
    assert calls == ["transfer"]
    _assert_exactly_once(before + after)
    starts = [f for f in before + after if _is("step", type="iteration", status="start")(f)]
    assert [f["data"]["tool_call_id"] for f in starts] == ["t1"]
    (done,) = [f["data"] for f in after if _is("step", type="iteration", status="done")(f)]
    assert done["tool_call_id"] == "t1" and done["error"] == UNKNOWN_OUTCOME
    assert (await ToolCallEntry.objects.aget(run=run)).status == "started"
    await ws.disconnect()


async def test_the_lease_renewer_stops_only_runs_whose_lease_was_taken_elsewhere(settings):
    # given three runs of this process: one still taking its lease (a busy database), one holding its
    # lease, and one whose lease another process took after the sweeper interrupted it
    from agents.runs.manager import RunHandle, RunManager

    settings.RUN_LEASE_RENEW_SECONDS = 0.02

    def runs():
        return [RunFactory(status="running", lease_owner=owner) for owner in ("", "here#2", "elsewhere#9")]

    starting, holding, taken = await database_sync_to_async(runs)()
    manager = RunManager()
    work = asyncio.create_task(asyncio.sleep(30))
    handles = {
        run.pk: RunHandle(run_id=run.pk, task=work, owner=owner, holds_lease=holds)
        for run, owner, holds in (
            (starting, "here#1", False),
            (holding, "here#2", True),
            (taken, "here#3", True),
        )
    }
    manager.runs.update(handles)

    # when the renewer runs a few times
    renewer = asyncio.create_task(manager._renew_leases())
    await asyncio.sleep(0.3)
    renewer.cancel()
    work.cancel()

    # then only the run whose lease is elsewhere is stopped
    assert [h.lost for h in handles.values()] == [False, False, True]
