"""PlanExecutor through the scripted LLM: concurrency, order, inputs, timeouts, deadlocks, stop and cancel."""

from __future__ import annotations

import asyncio

from agents.engine.follow_ups import FollowUpQueue
from agents.engine.llm import Usage
from agents.engine.plan.executor import (
    DEPENDENCY_RESULT_CHARS,
    STRUCTURED_RESULT_CHARS,
    PlanExecutor,
    looks_structured,
)
from agents.engine.plan.models import Plan, PlanStep
from tests.engine import test_plan_support as support
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.engine.test_plan_support import STEP
from tests.fakes.openai_server import call, error, hang, text, tool_calls

registry = support.registry  # fixtures
script = support.script


def plan_of(*steps: PlanStep, goal: str = "the goal") -> Plan:
    return Plan(goal=goal, steps=list(steps))


def statuses(plan: Plan) -> dict[str, str]:
    return {s.id: s.status for s in plan.steps}


def step_events(log: EventLog, type_: str = "step") -> list[dict]:
    return [e for e in log.of("plan") if e["type"] == type_]


async def test_independent_steps_run_concurrently(registry, script):
    latency = 0.6
    script.step("1", text("orders found", latency=latency))
    script.step("2", text("invoices found", latency=latency))
    plan = plan_of(PlanStep("1", "find orders"), PlanStep("2", "find invoices"))

    await PlanExecutor(registry, registry_of()).execute(plan)

    first, second = sorted(script.of(STEP), key=lambda r: r.arrived)
    # The second step asked the model before the first step's reply came back: they overlapped.
    assert second.arrived < first.arrived + latency
    assert statuses(plan) == {"1": "done", "2": "done"}


async def test_a_step_waits_for_its_dependency_and_receives_its_result(registry, script):
    script.step("1", text("ACME placed 3 orders", latency=0.2))
    script.step("2", text("3 orders is above average"))
    plan = plan_of(PlanStep("1", "count ACME orders"), PlanStep("2", "judge the count", ["1"]))
    log = EventLog()

    await PlanExecutor(registry, registry_of()).execute(plan, on_event=log)

    first, second = script.of(STEP)
    assert (first.step_id, second.step_id) == ("1", "2")
    step_input = second.user()
    assert "Overall goal:\nthe goal" in step_input
    assert "Your step (2):\njudge the count" in step_input
    assert "### Step 1: count ACME orders\nACME placed 3 orders" in step_input
    order = [(e["step_id"], e["status"]) for e in step_events(log)]
    assert order.index(("1", "done")) < order.index(("2", "running"))
    assert plan.step("2").result == "3 orders is above average"


async def test_at_most_five_steps_run_at_once_launched_in_id_order(registry, script):
    gate = asyncio.Event()
    work = RecordingTool("work", gate=gate)
    ids = [str(i) for i in range(1, 8)]
    for step_id in ids:
        script.step(step_id, tool_calls(call("work", {"q": step_id})), text(f"result {step_id}"))
    plan = plan_of(*(PlanStep(i, f"task {i}") for i in reversed(ids)))  # listed out of order
    log = EventLog()
    executor = PlanExecutor(registry, registry_of(work))
    assert executor.max_concurrency == 5

    run = asyncio.create_task(executor.execute(plan, on_event=log))
    await work.until_running(5)
    assert statuses(plan) == {"7": "pending", "6": "pending", **{i: "running" for i in ids[:5]}}
    gate.set()
    await run

    assert work.max_running == 5
    running = [e["step_id"] for e in step_events(log) if e["status"] == "running"]
    assert running == ids
    assert all(plan.step(i).result == f"result {i}" for i in ids)


async def test_each_step_is_a_fresh_agent_without_memory(registry, script):
    script.step("1", tool_calls(call("search", {"q": "a"})), text("one"))
    script.step("2", text("two"))
    plan = plan_of(PlanStep("1", "first"), PlanStep("2", "second", ["1"]))
    await PlanExecutor(registry, registry_of(RecordingTool())).execute(plan)
    (second,) = script.of(STEP, "2")
    roles = [m["role"] for m in second.body["messages"]]
    assert roles == ["system", "user"]  # none of step 1's conversation: only its answer, in the input
    assert "### Step 1: first\none" in second.user()


async def test_step_results_statuses_and_iterations_are_recorded_and_reported(registry, script):
    script.step("1", tool_calls(call("search", {"q": "acme"})), text("ACME: 3 orders"))
    plan = plan_of(PlanStep("1", "look up ACME"))
    log = EventLog()
    usage = Usage()

    await PlanExecutor(registry, registry_of(RecordingTool())).execute(plan, on_event=log, usage=usage)

    step = plan.step("1")
    assert (step.status, step.result, step.iterations, step.error) == ("done", "ACME: 3 orders", 2, None)
    assert [c.name for c in step.tool_calls] == ["search"]
    assert step.elapsed is not None and step.elapsed >= 0
    assert usage.calls == 2 and step.usage.calls == 2
    running, done = step_events(log)
    assert running == {"type": "step", "round": 1, "step_id": "1", "status": "running"}
    assert done == {
        "type": "step",
        "round": 1,
        "step_id": "1",
        "status": "done",
        "result": "ACME: 3 orders",
        "elapsed": step.elapsed,
    }


async def test_tool_calls_inside_a_step_are_reported_as_step_iteration_events(registry, script):
    script.step("s1", tool_calls(call("search", {"q": "acme"}, id="call_acme")), text("found"))
    log = EventLog()
    await PlanExecutor(registry, registry_of(RecordingTool())).execute(
        plan_of(PlanStep("s1", "look up")), on_event=log
    )
    start, done = step_events(log, "step_iteration")
    assert start == {
        "type": "step_iteration",
        "round": 1,
        "step_id": "s1",
        "status": "start",
        "iteration": 1,
        "tool_name": "search",
        "tool_args": {"q": "acme"},
        "tool_call_id": "r1.s1.call_acme",
    }
    assert done["status"] == "done" and done["step_id"] == "s1"
    assert done["observation"] == 'search: {"q": "acme"}' and done["error"] is None
    assert done["tool_call_id"] == "r1.s1.call_acme" and done["outcome"] == "ok"
    assert {e.channel for e in log.events} == {"plan"}  # no thinking/answer noise from the step agents


async def test_a_step_that_runs_too_long_fails_as_timed_out(registry, script):
    script.step("1", hang(5))
    script.step("2", text("quick"))
    plan = plan_of(PlanStep("1", "slow"), PlanStep("2", "quick"), PlanStep("3", "after slow", ["1"]))
    log = EventLog()

    await PlanExecutor(registry, registry_of(), step_timeout=0.3).execute(plan, on_event=log)

    assert statuses(plan) == {"1": "failed", "2": "done", "3": "failed"}
    assert plan.step("1").error == "timed out after 0.3 s"
    assert plan.step("3").error == "dependency 1 failed"
    assert not script.of(STEP, "3")


async def test_steps_whose_dependencies_failed_are_failed_with_a_reason_instead_of_waiting(registry, script):
    script.step("a", error(500, message="model down"))
    plan = plan_of(
        PlanStep("a", "first"),
        PlanStep("b", "needs a", ["a"]),
        PlanStep("c", "needs b", ["b"]),
    )
    log = EventLog()

    await asyncio.wait_for(PlanExecutor(registry, registry_of()).execute(plan, on_event=log), 10)

    assert statuses(plan) == {"a": "failed", "b": "failed", "c": "failed"}
    assert plan.step("a").error == "the step's agent stopped: llm_error"
    assert "because of the language model" in plan.step("a").result
    assert (plan.step("b").error, plan.step("c").error) == ("dependency a failed", "dependency b failed")
    assert [r.step_id for r in script.of(STEP)] == ["a"]
    failed = [e for e in step_events(log) if e["step_id"] == "b"]
    assert failed == [
        {"type": "step", "round": 1, "step_id": "b", "status": "failed", "error": "dependency a failed"}
    ]


async def test_steps_that_can_never_become_ready_are_failed_not_awaited(registry, script):
    # A plan built by hand with a cycle (the planner rejects these): nothing can start.
    plan = plan_of(PlanStep("1", "a", ["2"]), PlanStep("2", "b", ["1"]))
    await asyncio.wait_for(PlanExecutor(registry, registry_of()).execute(plan), 5)
    assert statuses(plan) == {"1": "failed", "2": "failed"}
    assert "can never finish" in (plan.step("1").error or "")
    assert not script.requests


async def test_a_step_stopped_by_its_iteration_cap_fails_with_its_partial_summary(registry, script):
    script.step("1", tool_calls(call("search", {"q": "a"})))
    plan = plan_of(PlanStep("1", "dig"))
    executor = PlanExecutor(registry, registry_of(RecordingTool()), agent_options={"max_iterations": 1})
    await executor.execute(plan)
    step = plan.step("1")
    assert (step.status, step.error) == ("failed", "the step's agent stopped: max_iterations")
    assert "`search`: called 1 time(s)" in step.result


async def test_a_step_stopped_by_its_iteration_cap_summarises_in_the_users_interface_language(
    registry, script
):
    # given an English plan run for a user whose interface is Chinese
    script.step("1", tool_calls(call("search", {"q": "a"})))
    plan = plan_of(PlanStep("1", "dig"))
    executor = PlanExecutor(registry, registry_of(RecordingTool()), agent_options={"max_iterations": 1})

    await executor.execute(plan, language="zh-hans")

    # then the step's partial summary is Chinese
    assert "已达到 1 次迭代上限" in plan.step("1").result


async def test_stop_skips_pending_steps_and_lets_running_steps_finish(registry, script):
    gate = asyncio.Event()
    slow = RecordingTool("slow", gate=gate)
    script.step("1", tool_calls(call("slow", {"q": "x"})), text("finished anyway"))
    plan = plan_of(PlanStep("1", "slow work"), PlanStep("2", "after", ["1"]), PlanStep("3", "other"))
    stop = asyncio.Event()
    log = EventLog()
    skipped = asyncio.Event()

    async def on_event(event):
        await log(event)
        if event.data.get("step_id") == "3" and event.data.get("status") == "skipped":
            skipped.set()

    executor = PlanExecutor(registry, registry_of(slow), max_concurrency=1)
    run = asyncio.create_task(executor.execute(plan, on_event=on_event, stop=stop))
    await slow.until_running(1)
    stop.set()
    await skipped.wait()
    assert plan.step("1").status == "running"  # skipped steps are reported at once, running ones go on
    gate.set()
    await run

    assert statuses(plan) == {"1": "done", "2": "skipped", "3": "skipped"}
    assert plan.step("1").result == "finished anyway"
    assert slow.cancelled == 0
    assert [r.step_id for r in script.of(STEP)] == ["1", "1"]


async def test_cancel_stops_running_steps_at_once_and_marks_unfinished_steps_cancelled(registry, script):
    gate = asyncio.Event()
    slow = RecordingTool("slow", gate=gate)
    script.step("1", tool_calls(call("slow", {"q": "x"})), text("never"))
    script.step("3", tool_calls(call("slow", {"q": "y"})), text("never"))
    plan = plan_of(
        PlanStep("1", "slow"),
        PlanStep("2", "after", ["1"]),
        PlanStep("3", "slow too"),
        PlanStep("4", "queued"),
    )
    log = EventLog()
    usage = Usage()
    executor = PlanExecutor(registry, registry_of(slow), max_concurrency=2)

    run = asyncio.create_task(executor.execute(plan, on_event=log, usage=usage))
    await slow.until_running(2)
    executor.cancel()
    returned = await asyncio.wait_for(run, 5)

    assert returned is plan
    assert statuses(plan) == {"1": "cancelled", "2": "cancelled", "3": "cancelled", "4": "cancelled"}
    assert slow.cancelled == 2 and slow.running == 0
    assert usage.calls == 2  # the cancelled steps' model calls are still counted
    cancelled = {e["step_id"] for e in step_events(log) if e["status"] == "cancelled"}
    assert cancelled == {"1", "2", "3", "4"}
    assert len(script.of(STEP)) == 2


async def test_cancel_before_execute_cancels_every_step_without_a_model_call(registry, script):
    executor = PlanExecutor(registry, registry_of())
    executor.cancel()
    plan = plan_of(PlanStep("1", "a"), PlanStep("2", "b"))
    await executor.execute(plan)
    assert statuses(plan) == {"1": "cancelled", "2": "cancelled"}
    assert not script.requests
    plan2 = plan_of(PlanStep("1", "a"))  # the next execute() runs normally
    script.step("1", text("ok"))
    await executor.execute(plan2)
    assert plan2.step("1").status == "done"


async def test_cancelling_the_awaiting_task_cancels_the_steps_and_propagates(registry, script):
    gate = asyncio.Event()
    slow = RecordingTool("slow", gate=gate)
    script.step("1", tool_calls(call("slow", {"q": "x"})))
    executor = PlanExecutor(registry, registry_of(slow))
    run = asyncio.create_task(executor.execute(plan_of(PlanStep("1", "slow"))))
    await slow.until_running(1)
    run.cancel()
    try:
        await run
    except asyncio.CancelledError:
        pass
    else:
        raise AssertionError("the cancellation was swallowed")
    assert slow.cancelled == 1 and slow.running == 0


async def test_step_agents_get_the_agent_options_but_never_the_follow_up_queue(registry, script):
    script.step("1", text("ok"))
    queue = FollowUpQueue()
    queue.put("a follow-up for the plan agent, not for a step")
    executor = PlanExecutor(
        registry,
        registry_of(),
        agent_options={"system_prompt": "You work for ACME.", "follow_ups": queue},
    )
    await executor.execute(plan_of(PlanStep("1", "a")))
    (request,) = script.requests
    assert request.body["messages"][0]["content"].startswith("You work for ACME.")
    assert queue.pending == 1


async def test_dependency_results_are_cut_with_more_room_for_tables_and_code(registry, script):
    prose = "word " * 2000
    table = "| id | total |\n|---|---|\n" + "".join(f"| {i} | {i * 10} |\n" for i in range(700))
    script.step("p", text(prose)).step("t", text(table)).step("n", text("ok"))
    plan = plan_of(PlanStep("p", "prose"), PlanStep("t", "table"), PlanStep("n", "next", ["p", "t"]))

    await PlanExecutor(registry, registry_of()).execute(plan)

    step_input = script.of(STEP, "n")[0].user()
    assert prose[:DEPENDENCY_RESULT_CHARS] + "… [cut:" in step_input
    assert prose[: DEPENDENCY_RESULT_CHARS + 5] not in step_input
    assert table[:STRUCTURED_RESULT_CHARS] + "… [cut:" in step_input


def test_tables_code_and_json_look_structured_prose_does_not():
    assert looks_structured("| a | b |\n|---|---|\n| 1 | 2 |")
    assert looks_structured("Here:\n```python\nprint(1)\n```")
    assert looks_structured('[{"id": 1}]')
    assert looks_structured("a\tb\tc\n1\t2\t3\n4\t5\t6")
    assert not looks_structured("ACME placed three orders | in March.")
