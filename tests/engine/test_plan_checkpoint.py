"""Durable plan-mode runs: checkpoints of plans and steps, resume after a crash, a parked step."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import date
from typing import Any

from agents.engine.durable.checkpoint import Checkpoint
from agents.engine.hooks import HookRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.plan.checkpoint import plan_from_dict, plan_to_dict
from agents.engine.plan.models import Plan, PlanStep
from tests.engine import test_plan_support as support
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.engine.test_checkpoint_resume import ParkingGate
from tests.engine.test_plan_support import STEP, plan_reply, step, verdict
from tests.fakes.openai_server import call, hang, text, tool_calls

registry = support.registry  # fixtures
script = support.script

GOAL = "Compare ACME's orders with its invoices"
RUN = {"run_id": "plan-run"}


class PlanCheckpoints:
    """Keeps the latest whole-state checkpoint (JSON copies, as a database would) and wakes waiters."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    async def __call__(self, checkpoint: Checkpoint) -> None:
        assert checkpoint.reset and checkpoint.messages == []
        data = json.loads(json.dumps(checkpoint.as_dict()))
        self.items.append({**data["state"], "seq": data["seq"]})
        self._changed.set()

    async def until(self, predicate: Any) -> dict[str, Any]:
        while True:
            for item in self.items:
                if predicate(item):
                    return item
            self._changed.clear()
            await self._changed.wait()

    @property
    def last(self) -> dict[str, Any]:
        return self.items[-1]


def _status(checkpoint: dict[str, Any], step_id: str) -> str | None:
    for plan in checkpoint.get("plans") or ():
        for entry in plan["steps"]:
            if entry["id"] == step_id:
                return entry["status"]
    return None


def agent(registry: Any, *tools: Any, **kwargs: Any) -> PlanAgent:
    return PlanAgent(registry, registry_of(*tools), today=lambda: date(2025, 3, 14), **kwargs)


async def test_a_plan_run_resumed_after_a_crash_keeps_its_finished_steps_and_finishes_the_rest(
    registry, script
):
    # given a plan whose first step finished and whose second step's model call never came back
    script.planner(plan_reply(step("1", "find orders"), step("2", "find invoices", ["1"])))
    script.step("1", tool_calls(call("search", {"q": "orders"}, id="o")), text("3 orders"))
    asked = threading.Event()

    def stuck(body: dict[str, Any]) -> Any:
        asked.set()
        return hang(30)

    script.step("2", stuck)
    search = RecordingTool("search")
    checkpoints = PlanCheckpoints()
    task = asyncio.create_task(agent(registry, search).run(GOAL, checkpoint=checkpoints, metadata=RUN))
    await checkpoints.until(lambda s: _status(s, "1") == "done")
    assert await asyncio.to_thread(asked.wait, 10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    # when another agent resumes from the last checkpoint
    script.step("2", text("3 invoices"))
    script.analyzer(verdict(True, 0.9, "complete", "3 orders, 3 invoices."))
    log = EventLog()
    result = await agent(registry, search).run(
        "ignored", resume_from=checkpoints.last, on_event=log, metadata=RUN
    )

    # then only the unfinished step ran again; the plan was not made again
    assert result.stop_reason == "achieved" and result.answer == "3 orders, 3 invoices."
    assert search.calls == [{"q": "orders"}]
    assert len(script.of("planner")) == 1 and len(script.of(STEP, "1")) == 2
    assert [s.status for s in result.plans[0].steps] == ["done", "done"]
    assert result.plans[0].steps[0].result == "3 orders"
    assert [e["step_id"] for e in log.of("plan") if e["type"] == "step" and e["status"] == "running"] == ["2"]


async def test_a_parked_step_parks_the_plan_run_and_the_resumed_step_replays_its_pending_call(
    registry, script
):
    # given a step whose tool call a hook parks (a long approval)
    script.planner(plan_reply(step("1", "pay the supplier")))
    script.step("1", tool_calls(call("search", {"q": "pay"}, id="p")))
    gate = ParkingGate()
    hooks = HookRegistry([gate])
    search = RecordingTool("search")
    checkpoints = PlanCheckpoints()
    log = EventLog()
    result = await agent(registry, search, hooks=hooks).run(
        GOAL, checkpoint=checkpoints, on_event=log, metadata=RUN
    )

    assert result.stop_reason == "parked" and result.park is not None
    assert result.park.details["approval_id"] == "ap-1"
    assert "done" not in log.channels() and search.calls == []
    parked = checkpoints.last
    assert _status(parked, "1") == "pending"
    assert parked["plans"][0]["steps"][0]["checkpoint"]["pending"][0]["id"] == "r1.1.p"

    # when the run resumes (the decision arrived)
    script.step("1", text("paid"))
    script.analyzer(verdict(True, 1.0, "done", "Paid."))
    resumed = await agent(registry, search, hooks=hooks).run("x", resume_from=parked, metadata=RUN)

    # then the step resumed at its pending call, which the hook saw as a replay
    assert gate.seen == [("r1.1.p", False), ("r1.1.p", True)]
    assert search.calls == [{"q": "pay"}]
    assert resumed.stop_reason == "achieved" and resumed.answer == "Paid."
    assert len(script.of(STEP, "1")) == 2  # the pending call was not asked for again


def test_a_running_step_is_restored_as_pending_with_its_checkpoint_and_finished_steps_keep_their_result():
    plan = Plan(
        goal="g",
        steps=[
            PlanStep(id="1", task="a", status="done", result="A", started_at=1.0, finished_at=3.5),
            PlanStep(id="2", task="b", dependencies=["1"], status="running", checkpoint={"v": 1}),
        ],
    )
    restored = plan_from_dict(json.loads(json.dumps(plan_to_dict(plan))))
    first, second = restored.steps
    assert (first.status, first.result, first.elapsed, first.checkpoint) == ("done", "A", 2.5, None)
    assert (second.status, second.dependencies) == ("pending", ["1"])
    assert second.checkpoint is not None and second.checkpoint["v"] == 1
