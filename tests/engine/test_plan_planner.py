"""Planner through the scripted LLM: one structured call on the smart model, recovery, validation."""

from __future__ import annotations

import json
from datetime import date

import pytest

from agents.engine.llm import Usage
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.models import PlanValidationError
from agents.engine.plan.planner import Planner
from tests.engine import test_plan_support as support
from tests.engine.doubles import RecordingTool, registry_of
from tests.engine.test_plan_support import (
    PLANNER,
    SUMMARY,
    plan_reply,
    step,
)
from tests.fakes.openai_server import call, error, text, tool_calls

registry = support.registry  # fixtures
script = support.script

TOOLS = registry_of(
    RecordingTool("search_orders", description="Search the ERP's sales orders by customer or date."),
    RecordingTool("get_invoice", description="Fetch one invoice by its number.\nMore detail here."),
)

TODAY = date(2025, 3, 14)


def planner(registry: ModelRegistry, **kwargs) -> Planner:
    return Planner(registry, today=lambda: TODAY, **kwargs)


async def test_one_structured_call_on_the_smart_model_makes_the_plan(registry, script):
    script.planner(
        plan_reply(
            step("1", "Find the orders of ACME", tool_hint="search_orders", model_hint="fast"),
            step("2", "Fetch invoice 7", tool_hint="get_invoice"),
            step("3", "Compare both", ["1", "2"], model_hint="reasoning"),
        )
    )
    usage = Usage()

    plan = await planner(registry).plan("Compare ACME's orders with invoice 7", tools=TOOLS, usage=usage)

    (request,) = script.requests
    assert (request.kind, request.model) == (PLANNER, "smart-model")
    assert request.body["tool_choice"] == {"type": "function", "function": {"name": "make_plan"}}
    assert plan.goal == "Compare ACME's orders with invoice 7" and plan.round == 1
    assert [(s.id, s.dependencies, s.tool_hint, s.model_hint) for s in plan.steps] == [
        ("1", [], "search_orders", "fast"),
        ("2", [], "get_invoice", None),
        ("3", ["1", "2"], None, "reasoning"),
    ]
    assert all(s.status == "pending" for s in plan.steps)
    assert usage.calls == 1 and usage.total_tokens > 0


async def test_planner_prompt_injects_the_date_the_tool_catalogue_and_the_step_rules(registry, script):
    script.planner(plan_reply(step("1", "a"), step("2", "b")))
    await planner(registry).plan("goal", tools=TOOLS)
    system = script.requests[0].body["messages"][0]["content"]
    assert "Today's date: 2025-03-14." in system
    assert "- search_orders: Search the ERP's sales orders by customer or date." in system
    assert "- get_invoice: Fetch one invoice by its number." in system and "More detail" not in system
    assert "2 to 6 steps" in system
    assert '"dependencies"' in system and '"tool_hint"' in system and '"model_hint"' in system


async def test_planner_asks_for_tasks_in_the_language_of_the_goal(registry, script):
    script.planner(plan_reply(step("1", "查询订单"), step("2", "汇总结果", ["1"])))
    plan = await planner(registry).plan("帮我汇总本月订单", tools=TOOLS)
    request = script.requests[0]
    assert "Write every task in the same language as the goal." in request.body["messages"][0]["content"]
    assert request.user() == "Goal:\n帮我汇总本月订单"
    assert [s.task for s in plan.steps] == ["查询订单", "汇总结果"]


async def test_a_bare_step_object_is_recovered(registry, script):
    script.planner(tool_calls(call("make_plan", {"id": "1", "task": "Look it up", "dependencies": []})))
    plan = await planner(registry).plan("goal", tools=TOOLS)
    assert [(s.id, s.task) for s in plan.steps] == [("1", "Look it up")]
    assert len(script.requests) == 1  # fewer than min_steps is accepted, not re-asked


async def test_a_bare_list_in_plain_json_is_recovered_as_the_steps(make_llm, script):
    json_model = make_llm(model="smart-model", tool_call=False)
    listing = json.dumps([step("1", "a"), step("2", "b", ["1"])])
    script.planner(text(listing))
    plan = await planner(ModelRegistry({"general": json_model})).plan("goal", tools=TOOLS)
    assert [(s.id, s.dependencies) for s in plan.steps] == [("1", []), ("2", ["1"])]
    assert script.requests[0].body["response_format"] == {"type": "json_object"}


async def test_a_bare_list_as_function_arguments_is_recovered(registry, script):
    script.planner(tool_calls(call("make_plan", json.dumps([step("a", "x"), step("b", "y")]))))
    plan = await planner(registry).plan("goal", tools=TOOLS)
    assert [s.id for s in plan.steps] == ["a", "b"]
    assert len(script.requests) == 1


async def test_dangling_dependencies_are_pruned_from_the_plan(registry, script):
    script.planner(plan_reply(step("1", "a"), step("2", "b", ["1", "7"])))
    plan = await planner(registry).plan("goal", tools=TOOLS)
    assert plan.steps[1].dependencies == ["1"]


async def test_ids_are_normalised_to_unique_strings_in_the_plan(registry, script):
    script.planner(tool_calls(call("make_plan", {"steps": [{"id": 1, "task": "a"}, {"id": 1, "task": "b"}]})))
    plan = await planner(registry).plan("goal", tools=TOOLS)
    assert [s.id for s in plan.steps] == ["1", "1-2"]


async def test_a_cycle_is_rejected_then_retried_once_with_feedback(registry, script):
    cyclic = plan_reply(step("1", "a", ["2"]), step("2", "b", ["1"]))
    script.planner(cyclic, plan_reply(step("1", "a"), step("2", "b", ["1"])))

    plan = await planner(registry).plan("goal", tools=TOOLS)

    assert [s.dependencies for s in plan.steps] == [[], ["1"]]
    first, retry = script.of(PLANNER)
    messages = retry.body["messages"]
    assert messages[:2] == first.body["messages"]
    assert messages[2]["role"] == "assistant" and json.loads(messages[2]["content"])["steps"][0]["id"] == "1"
    assert messages[3]["role"] == "user"
    assert "the dependencies form a cycle: steps 1, 2 can never start" in messages[3]["content"]


async def test_a_second_cyclic_plan_fails_with_plan_validation_error(registry, script):
    cyclic = plan_reply(step("1", "a", ["2"]), step("2", "b", ["1"]))
    script.planner(cyclic, cyclic, cyclic)
    with pytest.raises(PlanValidationError, match="cycle"):
        await planner(registry).plan("goal", tools=TOOLS)
    assert len(script.of(PLANNER)) == 2


async def test_more_than_max_steps_is_rejected_then_retried(registry, script):
    seven = [step(str(i), f"t{i}") for i in range(1, 8)]
    script.planner(plan_reply(*seven), plan_reply(*seven[:3]))
    plan = await planner(registry).plan("goal", tools=TOOLS)
    assert len(plan.steps) == 3
    assert "it has 7 steps; at most 6 are allowed" in script.of(PLANNER)[1].body["messages"][-1]["content"]


async def test_a_model_that_never_gives_json_fails_with_plan_validation_error(make_llm, script):
    text_model = make_llm(model="smart-model", tool_call=False, json_mode=False)
    script.planner(text("I would first look things up."), text("Sorry, no JSON today."))
    with pytest.raises(PlanValidationError, match="no usable plan"):
        await planner(ModelRegistry({"general": text_model})).plan("goal", tools=TOOLS)


async def test_an_unreachable_model_fails_with_plan_validation_error(registry, scripted_llm):
    scripted_llm.script(*([error(503)] * 5))
    with pytest.raises(PlanValidationError):
        await planner(registry).plan("goal", tools=TOOLS)


async def test_a_short_history_goes_to_the_planner_verbatim(registry, script):
    script.planner(plan_reply(step("1", "a"), step("2", "b")))
    history = [
        {"role": "user", "content": "We sell to ACME."},
        {"role": "assistant", "content": "Noted."},
    ]
    await planner(registry).plan("goal", tools=TOOLS, history=history)
    assert [r.kind for r in script.requests] == [PLANNER]
    assert (
        "The conversation so far:\nuser: We sell to ACME.\n\nassistant: Noted." in script.requests[0].user()
    )


async def test_a_long_history_is_summarised_by_the_fast_model_into_the_planner_input(registry, script):
    script.summary(text("ACME is the key customer; invoices are due on the 5th."))
    script.planner(plan_reply(step("1", "a"), step("2", "b")))
    history = [{"role": "user", "content": "x" * 4000}, {"role": "assistant", "content": "y" * 4000}]
    usage = Usage()

    await planner(registry).plan("goal", tools=TOOLS, history=history, usage=usage)

    summary, plan_request = script.requests
    assert (summary.kind, summary.model) == (SUMMARY, "fast-model")
    assert "x" * 4000 in summary.user()
    prompt = plan_request.user()
    assert "(summarised):\nACME is the key customer; invoices are due on the 5th." in prompt
    assert "x" * 100 not in prompt
    assert usage.calls == 2


async def test_a_failed_history_summary_keeps_the_latest_part_of_the_history(registry, script):
    script.summary(error(500), error(500))
    script.planner(plan_reply(step("1", "a"), step("2", "b")))
    history = [{"role": "user", "content": "old " * 2000}, {"role": "user", "content": "the latest words"}]
    await planner(registry, history_summary_chars=1000).plan("goal", tools=TOOLS, history=history)
    prompt = script.of(PLANNER)[0].user()
    assert prompt.rstrip().endswith("the latest words")
    assert len(prompt) < 1200


async def test_feedback_from_earlier_rounds_reaches_the_planner(registry, script):
    script.planner(plan_reply(step("1", "a"), step("2", "b")))
    plan = await planner(registry).plan(
        "goal", tools=TOOLS, feedback="Round 1: step 1 failed", round_number=2
    )
    assert "Earlier rounds:\nRound 1: step 1 failed" in script.requests[0].user()
    assert plan.round == 2


async def test_the_planner_works_with_a_single_general_model(make_llm, script):
    script.planner(plan_reply(step("1", "a"), step("2", "b")))
    await planner(ModelRegistry.single(make_llm(model="only-model"))).plan("goal", tools=TOOLS)
    assert script.requests[0].model == "only-model"
