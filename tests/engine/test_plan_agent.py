"""PlanAgent through the scripted LLM: rounds and their stop conditions, follow-ups, events, cancellation."""

from __future__ import annotations

import asyncio
from datetime import date

from agents.engine.follow_ups import FollowUpQueue
from agents.engine.metering import MeteredLLM
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import FOLLOW_UP_REASONING, PLANNING_FAILED_REASONING, PlanAgent
from tests.engine import test_plan_support as support
from tests.engine.doubles import EventLog, RecordingTool, SynthesisBudget, registry_of
from tests.engine.test_plan_support import ANALYZER, PLANNER, STEP, SYNTHESIS, plan_reply, step, verdict
from tests.fakes.openai_server import call, hang, text, tool_calls

registry = support.registry  # fixtures
script = support.script

GOAL = "Compare ACME's orders with its invoices"


def agent(registry, *tools, **kwargs) -> PlanAgent:
    return PlanAgent(registry, registry_of(*tools), today=lambda: date(2025, 3, 14), **kwargs)


def two_steps(round_: int = 1):
    return plan_reply(step("1", f"find orders r{round_}"), step("2", f"find invoices r{round_}"))


def plan_events(log: EventLog, type_: str) -> list[dict]:
    return [e for e in log.of("plan") if e["type"] == type_]


# --- one round, events --------------------------------------------------------------------------


async def test_a_round_reports_phases_the_dag_step_statuses_then_the_answer_and_done(registry, script):
    script.planner(plan_reply(step("1", "find orders", tool_hint="search"), step("2", "compare", ["1"])))
    script.step("1", tool_calls(call("search", {"q": "acme"})), text("3 orders"))
    script.step("2", text("orders match invoices"))
    script.analyzer(verdict(True, 0.9, "complete", "The 3 orders match the invoices."))
    script.synthesis(text("ACME's 3 orders match its invoices."))
    plan_agent = agent(registry, RecordingTool("search"))
    log = EventLog()

    result = await plan_agent.run(GOAL, on_event=log)
    answer = await plan_agent.stream_synthesize(result, on_event=log)

    assert log.labels() == [
        "phase",
        "plan:dag",
        "phase",
        "plan:step:running",
        "plan:step_iteration:start",
        "plan:step_iteration:done",
        "plan:step:done",
        "plan:step:running",
        "plan:step:done",
        "phase",
        "answer:start",
        *["answer:delta"] * len([e for e in log.of("answer") if e["status"] == "delta"]),
        "answer:done",
        "done",
    ]
    assert [e for e in log.of("phase")] == [
        {"phase": "planning", "round": 1},
        {"phase": "executing", "round": 1},
        {"phase": "analyzing", "round": 1},
    ]
    (dag,) = plan_events(log, "dag")
    assert dag == {
        "type": "dag",
        "round": 1,
        "steps": [
            {
                "id": "1",
                "task": "find orders",
                "dependencies": [],
                "tool_hint": "search",
                "model_hint": None,
                "status": "pending",
            },
            {
                "id": "2",
                "task": "compare",
                "dependencies": ["1"],
                "tool_hint": None,
                "model_hint": None,
                "status": "pending",
            },
        ],
    }
    assert answer == "ACME's 3 orders match its invoices."
    assert (result.stop_reason, result.rounds, result.iterations) == ("achieved", 1, 3)
    assert result.answer == "The 3 orders match the invoices."
    assert log.of("done") == [
        {
            "answer": answer,
            "iterations": 3,
            "usage": log.of("done")[0]["usage"],
            "elapsed": log.of("done")[0]["elapsed"],
            "cancelled": False,
            "stop_reason": "achieved",
        }
    ]
    assert log.of("done")[0]["usage"]["calls"] == len(script.requests)


async def test_the_events_iterator_runs_and_synthesises(registry, script):
    script.planner(two_steps()).step("1", text("a")).step("2", text("b"))
    script.analyzer(verdict(True, 1.0, "", "ab")).synthesis(text("A and B."))
    labels = [e.channel async for e in agent(registry).events(GOAL)]
    assert labels[0] == "phase" and labels[-1] == "done"


# --- the stop conditions of re-planning ---------------------------------------------------------


async def test_replanning_stops_when_the_goal_is_achieved(registry, script):
    script.planner(two_steps()).step("1", text("a")).step("2", text("b"))
    script.analyzer(verdict(True, 0.3, "done", "ab"))
    result = await agent(registry).run(GOAL)
    assert (result.stop_reason, result.rounds) == ("achieved", 1)
    assert len(script.of(PLANNER)) == 1


async def test_replanning_stops_when_confidence_reaches_the_threshold(registry, script):
    script.planner(two_steps()).step("1", text("a")).step("2", text("b"))
    script.analyzer(verdict(False, 0.8, "good enough", "ab"))
    result = await agent(registry).run(GOAL)
    assert (result.stop_reason, result.rounds) == ("confident", 1)
    assert result.analysis is not None and result.analysis.confidence == 0.8


async def test_replanning_stops_when_the_budget_of_three_rounds_is_spent(registry, script):
    for round_ in (1, 2, 3):
        script.planner(two_steps(round_))
        script.step("1", text(f"orders {round_}")).step("2", text(f"invoices {round_}"))
        script.analyzer(verdict(False, 0.1 * round_, f"still missing part {round_}"))
    log = EventLog()

    result = await agent(registry).run(GOAL, on_event=log)

    assert (result.stop_reason, result.rounds) == ("max_rounds", 3)
    assert [len(script.of(kind)) for kind in (PLANNER, ANALYZER)] == [3, 3]
    assert [p.round for p in result.plans] == [1, 2, 3]
    replanning = [e for e in log.of("phase") if e["phase"] == "replanning"]
    assert replanning == [
        {"phase": "replanning", "round": 2, "reasoning": "still missing part 1"},
        {"phase": "replanning", "round": 3, "reasoning": "still missing part 2"},
    ]
    assert [e["round"] for e in plan_events(log, "dag")] == [1, 2, 3]


async def test_confidence_below_the_threshold_replans(registry, script):
    script.planner(two_steps(1), two_steps(2))
    script.step("1", text("a"), text("a2")).step("2", text("b"), text("b2"))
    script.analyzer(verdict(False, 0.79, "not sure"), verdict(True, 0.9, "ok", "done"))
    result = await agent(registry).run(GOAL)
    assert (result.stop_reason, result.rounds) == ("achieved", 2)


async def test_the_replan_context_summarises_each_previous_step_in_at_most_500_characters(registry, script):
    script.planner(two_steps(1), two_steps(2))
    script.step("1", text("x" * 2000), text("ok")).step("2", text("b"), text("ok"))
    script.analyzer(verdict(False, 0.3, "returns are missing"), verdict(True, 1.0, "", "done"))

    await agent(registry).run(GOAL)

    context = script.of(PLANNER)[1].user()
    assert (
        "Earlier rounds:\nRound 1:\nVerdict: achieved=False, confidence=0.30. returns are missing" in context
    )
    step_lines = [line for line in context.splitlines() if line.startswith("- step ")]
    assert [line[:24] for line in step_lines] == ["- step 1 [done] find ord", "- step 2 [done] find inv"]
    assert max(len(line) for line in step_lines) == 500
    assert step_lines[1] == "- step 2 [done] find invoices r1 -> b"


# --- user follow-ups ----------------------------------------------------------------------------


async def test_a_follow_up_stops_the_round_and_replans_without_spending_budget(registry, script):
    gate = asyncio.Event()
    slow = RecordingTool("slow", gate=gate)
    queue = FollowUpQueue()
    script.planner(
        plan_reply(step("1", "slow look-up"), step("2", "after it", ["1"])),
        plan_reply(step("1", "look up EMEA too"), step("2", "compare")),
        plan_reply(step("1", "look up EMEA again"), step("2", "compare again")),
    )
    script.step("1", tool_calls(call("slow", {"q": "x"})), text("first result"), text("emea"), text("emea 2"))
    script.step("2", text("compared"), text("compared again"))
    script.analyzer(verdict(False, 0.2, "partial"), verdict(False, 0.3, "still partial"))
    log = EventLog()
    plan_agent = agent(registry, slow, follow_ups=queue, max_rounds=2)

    run = asyncio.create_task(plan_agent.run(GOAL, on_event=log))
    await slow.until_running(1)
    queue.put("Also include EMEA.")
    gate.set()
    result = await run

    first, second, _third = result.plans
    assert [s.status for s in first.steps] == ["done", "skipped"]  # running step finished, pending skipped
    # Two analysed rounds after the stopped one: the stopped round did not count against max_rounds=2.
    assert result.rounds == 3 and result.stop_reason == "max_rounds"
    assert len(script.of(ANALYZER)) == 2
    assert result.goal == f"{GOAL}\n\n[Follow-up from the user]\nAlso include EMEA."
    assert second.goal == result.goal
    assert script.of(PLANNER)[1].user().startswith(f"Goal:\n{result.goal}")
    assert log.of("inject") == [{"type": "inject", "content": "Also include EMEA."}]
    assert {"phase": "replanning", "round": 2, "reasoning": FOLLOW_UP_REASONING} in log.of("phase")


async def test_a_follow_up_during_analysis_replans_even_when_the_goal_was_achieved(registry, script):
    queue = FollowUpQueue()

    def achieved_but_user_adds_something(body):
        queue.put("And the credit notes?")
        return verdict(True, 1.0, "done", "ab")

    script.planner(two_steps(1), two_steps(2))
    script.step("1", text("a"), text("a2")).step("2", text("b"), text("b2"))
    script.analyzer(achieved_but_user_adds_something, verdict(True, 1.0, "done", "with credit notes"))

    result = await agent(registry, follow_ups=queue, max_rounds=1).run(GOAL)

    assert (result.rounds, result.stop_reason) == (2, "achieved")
    assert result.answer == "with credit notes"
    assert "[Follow-up from the user]\nAnd the credit notes?" in script.of(PLANNER)[1].user()


async def test_a_follow_up_queued_during_planning_skips_the_stale_plan(registry, script):
    queue = FollowUpQueue()

    def plan_then_user_writes(body):
        queue.put("Only March, please.")
        return two_steps(1)

    script.planner(plan_then_user_writes, two_steps(2))
    script.step("1", text("march orders")).step("2", text("march invoices"))
    script.analyzer(verdict(True, 1.0, "", "March compared"))
    log = EventLog()

    result = await agent(registry, follow_ups=queue).run(GOAL, on_event=log)

    assert [s.status for s in result.plans[0].steps] == ["skipped", "skipped"]
    assert [s.status for s in result.plans[1].steps] == ["done", "done"]
    # each step of the new plan ran once, none of the stale one's (the two run side by side: any order)
    assert sorted(r.step_id for r in script.of(STEP)) == ["1", "2"]


# --- planning failures --------------------------------------------------------------------------


async def test_when_no_plan_can_be_made_the_goal_runs_as_one_step(registry, script):
    cyclic = plan_reply(step("1", "a", ["2"]), step("2", "b", ["1"]))
    script.planner(cyclic, cyclic)
    script.step("1", text("did it directly"))
    script.analyzer(verdict(True, 1.0, "", "done directly"))
    log = EventLog()

    result = await agent(registry).run(GOAL, on_event=log)

    (only,) = result.plans[0].steps
    assert (only.id, only.task, only.status, only.result) == ("1", GOAL, "done", "did it directly")
    assert {"phase": "planning", "round": 1, "reasoning": PLANNING_FAILED_REASONING} in log.of("phase")
    assert result.stop_reason == "achieved"


async def test_a_failed_replan_ends_the_run_with_what_it_has(registry, script):
    cyclic = plan_reply(step("1", "a", ["2"]), step("2", "b", ["1"]))
    script.planner(two_steps(1), cyclic, cyclic)
    script.step("1", text("orders")).step("2", text("invoices"))
    script.analyzer(verdict(False, 0.2, "incomplete", "partial answer"))
    result = await agent(registry).run(GOAL)
    assert (result.stop_reason, result.rounds, result.answer) == ("planning_failed", 1, "partial answer")


# --- stream_synthesize and its fallbacks --------------------------------------------------------


async def test_synthesis_streams_from_the_goal_and_the_steps_on_the_general_model(registry, script):
    script.planner(two_steps()).step("1", text("3 orders")).step("2", text("3 invoices"))
    script.analyzer(verdict(True, 1.0, "", "draft"))
    script.synthesis(text("Three orders, three invoices.", chunk_size=6))
    plan_agent = agent(registry)
    log = EventLog()

    answer = await plan_agent.stream_synthesize(await plan_agent.run(GOAL), on_event=log)

    (request,) = script.of(SYNTHESIS)
    assert request.model == "general-model" and request.body["stream"] is True
    system, user = request.body["messages"]
    assert "same language as the user's question" in system["content"]
    assert user["content"].startswith(f"Question:\n{GOAL}")
    assert "### find orders r1\n3 orders" in user["content"]
    assert "### find invoices r1\n3 invoices" in user["content"]
    assert "Draft answer (may be terse or incomplete):\ndraft" in user["content"]
    assert answer == "Three orders, three invoices."
    deltas = [e["content"] for e in log.of("answer") if e["status"] == "delta"]
    assert "".join(deltas) == answer and len(deltas) > 1
    assert log.of("answer")[-1] == {"status": "done", "content": answer, "fallback": False}


async def test_synthesis_falls_back_to_the_analysers_final_answer(registry, script):
    script.planner(two_steps()).step("1", text("a")).step("2", text("b"))
    script.analyzer(verdict(True, 1.0, "", "The analyser's answer."))
    script.synthesis(text("Half an ans", die_after_chunks=1))
    plan_agent = agent(registry)
    log = EventLog()
    answer = await plan_agent.stream_synthesize(await plan_agent.run(GOAL), on_event=log)
    assert answer == "The analyser's answer."
    assert log.of("answer")[-1] == {"status": "done", "content": answer, "fallback": True}
    assert log.of("done")[0]["answer"] == answer


async def test_synthesis_falls_back_to_the_finished_step_results_joined(registry, script):
    script.planner(plan_reply(step("1", "find orders"), step("2", "find invoices"), step("3", "broken")))
    script.step("1", text("3 orders")).step("2", text("2 invoices")).step("3", hang(5))
    script.analyzer(verdict(False, 0.9, "returns missing", ""))
    plan_agent = agent(registry, step_timeout=0.3)
    log = EventLog()

    answer = await plan_agent.stream_synthesize(await plan_agent.run(GOAL), on_event=log)

    assert answer == "**find orders**\n\n3 orders\n\n**find invoices**\n\n2 invoices"
    assert [e["content"] for e in log.of("answer") if e["status"] == "delta"] == [answer]
    assert log.of("answer")[-1]["fallback"] is True


async def test_the_last_resort_answer_says_nothing_was_done_in_the_goals_language(registry, script):
    script.planner(two_steps()).step("1", hang(5)).step("2", hang(5))
    script.analyzer(verdict(False, 0.9, "nothing", ""))
    result = await agent(registry, step_timeout=0.2).run("对比订单和发票")
    assert result.answer == "计划中没有任何步骤完成。"


# --- cancellation -------------------------------------------------------------------------------


async def test_cancel_during_execution_cancels_the_steps_and_reports_a_cancelled_done(registry, script):
    gate = asyncio.Event()
    slow = RecordingTool("slow", gate=gate)
    script.planner(plan_reply(step("1", "slow"), step("2", "after", ["1"])))
    script.step("1", tool_calls(call("slow", {"q": "x"})))
    plan_agent = agent(registry, slow)
    log = EventLog()

    run = asyncio.create_task(plan_agent.run(GOAL, on_event=log))
    await slow.until_running(1)
    plan_agent.cancel()
    result = await asyncio.wait_for(run, 5)

    assert result.cancelled and result.stop_reason == "cancelled" and result.answer == ""
    assert [s.status for s in result.plans[0].steps] == ["cancelled", "cancelled"]
    assert slow.cancelled == 1
    assert not script.of(ANALYZER)
    (done,) = log.of("done")
    assert done["cancelled"] is True and done["stop_reason"] == "cancelled"
    assert await plan_agent.stream_synthesize(result, on_event=log) == ""
    assert log.channels().count("done") == 1  # nothing more for a cancelled result


async def test_cancel_while_the_planner_waits_for_the_model_returns_a_cancelled_result(registry, script):
    plan_agent = agent(registry)
    loop = asyncio.get_running_loop()

    def cancel_on_arrival(body):
        loop.call_soon_threadsafe(plan_agent.cancel)  # the request reached the model: cancel now
        return hang(5)

    script.planner(cancel_on_arrival)
    log = EventLog()
    result = await asyncio.wait_for(plan_agent.run(GOAL, on_event=log), 5)
    assert result.cancelled and result.plans == ()
    assert len(script.of(PLANNER)) == 1
    assert log.of("done")[0]["cancelled"] is True


async def test_cancel_before_run_stops_it_as_soon_as_it_starts(registry, script):
    plan_agent = agent(registry)
    plan_agent.cancel()
    result = await plan_agent.run(GOAL)
    assert result.cancelled and not script.requests


async def test_a_budget_refusing_the_plans_synthesis_ends_the_answer_with_budget_exceeded(make_llm, script):
    # given a round that achieves the goal, and a budget that refuses the synthesis
    script.planner(plan_reply(step("1", "find orders")))
    script.step("1", text("3 orders"))
    script.analyzer(verdict(True, 0.9, "complete", "ACME has 3 orders."))
    script.synthesis(text("never asked"))
    metered = ModelRegistry.single(MeteredLLM(make_llm(), SynthesisBudget()))
    plan_agent = agent(metered)
    result = await plan_agent.run(GOAL)

    # when the answer is synthesised
    log = EventLog()
    answered = await plan_agent.answer(result, on_event=log)

    # then the synthesis was not sent, and the run stopped at the budget, naming it before the draft
    assert script.of(SYNTHESIS) == []
    expected = (
        "I stopped before the task was finished: the monthly token budget “Acme” of the organization "
        "(2000 tokens) is used up.\n\nACME has 3 orders."
    )
    assert (answered.text, answered.stop_reason) == (expected, "budget_exceeded")
    (done,) = log.of("done")
    assert (done["stop_reason"], done["answer"]) == ("budget_exceeded", expected)
