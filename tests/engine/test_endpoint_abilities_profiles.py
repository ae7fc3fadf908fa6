"""Every provider profile of the scripted server: the engine, set up with the abilities the provider really has,
triggers none of its refusals; set up with the defaults, it degrades once to what the provider accepts."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import pytest

from agents.engine.abilities import FORCED_TOOL_CHOICE, JSON_MODE, refused
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.react import ReActAgent
from agents.engine.structured import structured_llm_call
from tests.engine.doubles import RecordingTool, registry_of
from tests.fakes.openai_replies import Reply
from tests.fakes.openai_server import call, text, tool_calls
from tests.fakes.provider_profiles import PROFILES, VLLM_NO_TOOL_PARSER, ProviderProfile

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
REFUSALS = (
    "tool_choice_refused",
    "auto_tool_choice_refused",
    "json_word_refused",
    "json_mode_refused",
    "stream_only_refused",
    "reasoning_back_refused",
    "auth_header_refused",
    "query_refused",
)
FINAL = '{"reasoning": "done", "action": {"type": "final_answer", "answer": "done"}}'


def ids(profiles: tuple[ProviderProfile, ...] | list[ProviderProfile]) -> list[str]:
    return [p.name for p in profiles]


def structured_answer(body: dict[str, Any]) -> Reply:
    """The model's answer at whatever level the engine asked: a call of the offered function, or JSON text."""
    if body.get("tools"):
        return tool_calls(call(body["tools"][0]["function"]["name"], {"n": 1}))
    return text('{"n": 1}')


def first_step(body: dict[str, Any]) -> Reply:
    """Two look-ups: a parallel pair of native calls, or one JSON-protocol action."""
    if body.get("tools"):
        return tool_calls(call("search", {"q": "a"}), call("search", {"q": "b"}))
    return text(
        '{"reasoning": "look", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "a"}}}'
    )


def final_step(body: dict[str, Any]) -> Reply:
    return text("done") if body.get("tools") else text(FINAL)


@pytest.mark.parametrize("profile", PROFILES, ids=ids(PROFILES))
async def test_with_the_providers_abilities_no_request_is_refused(scripted_llm, make_profile_llm, profile):
    llm = make_profile_llm(profile)
    scripted_llm.script(structured_answer, first_step, final_step, text("The orders a and b."))
    search = RecordingTool("search")

    value = await structured_llm_call(llm, [{"role": "user", "content": "How many?"}], schema=SCHEMA)
    agent = ReActAgent(llm, registry_of(search))
    result = await agent.run("Look up a and b")
    answer = await agent.stream_answer(result)

    assert value.value == {"n": 1} and value.attempts == 1
    assert result.stop_reason == "final_answer" and answer == "The orders a and b."
    assert search.calls and search.calls[0] == {"q": "a"}
    assert {q: scripted_llm.quirks[q] for q in REFUSALS if scripted_llm.quirks[q]} == {}
    assert refused(llm) == frozenset()
    with_tools = [r for r in scripted_llm.requests if r.get("tools")]
    sent_parallel = {r.get("parallel_tool_calls") for r in with_tools if "tool_choice" not in r}
    if with_tools and not profile.abilities["parallel_tool_calls"]:
        assert sent_parallel == {False}
    else:
        assert sent_parallel <= {None}


FORCING_REFUSED = [p for p in PROFILES if p.tool_choice_refusal is not None]
JSON_MODE_REFUSED = [p for p in PROFILES if p.json_mode_refusal is not None]


@pytest.mark.parametrize("profile", FORCING_REFUSED, ids=ids(FORCING_REFUSED))
async def test_left_on_forced_tool_choice_the_ladder_degrades_once(scripted_llm, make_profile_llm, profile):
    llm = make_profile_llm(profile, abilities={"forced_tool_choice": True})
    scripted_llm.script(structured_answer, structured_answer)
    first = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    second = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert first.value == second.value == {"n": 1}
    assert first.degraded == (FORCED_TOOL_CHOICE,) and second.degraded == ()
    assert scripted_llm.quirks["tool_choice_refused"] == 1
    assert FORCED_TOOL_CHOICE in refused(llm)


@pytest.mark.parametrize("profile", JSON_MODE_REFUSED, ids=ids(JSON_MODE_REFUSED))
async def test_left_on_json_mode_structured_output_and_the_json_loop_go_on_in_plain_text(
    scripted_llm, make_profile_llm, profile
):
    llm = make_profile_llm(profile, abilities={"tool_call": False, "json_mode": True})
    scripted_llm.script(structured_answer, first_step, final_step)
    value = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    result = await ReActAgent(llm, registry_of(RecordingTool("search"))).run("Look up a")
    assert (value.level, value.value) == ("plain_text", {"n": 1})
    assert result.stop_reason == "final_answer" and result.answer == "done"
    assert scripted_llm.quirks["json_mode_refused"] == 1
    assert JSON_MODE in refused(llm)


async def test_vllm_without_a_tool_parser_left_on_function_calling_still_runs_the_calls(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(VLLM_NO_TOOL_PARSER, abilities={"tool_call": True, "parallel_tool_calls": True})
    scripted_llm.script(first_step, final_step)
    search = RecordingTool("search")
    result = await ReActAgent(llm, registry_of(search)).run("Look up a and b")
    assert result.answer == "done" and search.calls == [{"q": "a"}, {"q": "b"}]
    assert [c.name for c in result.tool_calls] == ["search", "search"]
    assert scripted_llm.quirks["tool_calls_as_text"] == 1
    assert scripted_llm.quirks["auto_tool_choice_refused"] == 0


def plan_mode_answer(body: dict[str, Any]) -> Reply:
    """Plan mode's requests, told apart by their prompts: planner, analyser, the step, the synthesis."""
    messages = body["messages"]
    system = str(messages[0].get("content") or "") if messages[0]["role"] == "system" else ""

    def structured(value: dict[str, Any]) -> Reply:
        if body.get("tools"):
            return tool_calls(call(body["tools"][0]["function"]["name"], value))
        return text(json.dumps(value))

    if system.startswith("You plan how"):
        plan_step = {"id": "1", "task": "Look up order a", "dependencies": [], "tool_hint": "search"}
        return structured({"steps": [plan_step]})
    if system.startswith("You judge whether"):
        return structured(
            {"achieved": True, "confidence": 0.9, "reasoning": "done", "final_answer": "a is open"}
        )
    if any("Your step (" in str(m.get("content") or "") for m in messages if m["role"] == "user"):
        looked_up = any(m["role"] == "tool" or "Observation from" in str(m.get("content")) for m in messages)
        if looked_up:
            return final_step(body)
        if body.get("tools"):
            return tool_calls(call("search", {"q": "a"}))
        return first_step(body)
    return text("Order a is open.")


@pytest.mark.parametrize("profile", PROFILES, ids=ids(PROFILES))
async def test_a_plan_mode_run_on_each_provider_triggers_no_refusal(scripted_llm, make_profile_llm, profile):
    llm = make_profile_llm(profile)
    scripted_llm.script(*[plan_mode_answer] * 12)
    search = RecordingTool("search")
    agent = PlanAgent(ModelRegistry.single(llm), registry_of(search), today=lambda: date(2025, 3, 14))

    result = await agent.run("Is order a open?")
    answer = await agent.stream_synthesize(result)

    assert answer == "Order a is open." and search.calls == [{"q": "a"}]
    assert {q: scripted_llm.quirks[q] for q in REFUSALS if scripted_llm.quirks[q]} == {}
    assert refused(llm) == frozenset()
