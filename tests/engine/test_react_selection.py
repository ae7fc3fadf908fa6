"""Tool selection above 12 tools: at most 6 kept, from a compact catalogue, never fatal."""

from __future__ import annotations

import json

from agents.engine.react import ReActAgent
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, error, text, tool_calls


def many_tools(count: int) -> list[RecordingTool]:
    return [RecordingTool(f"tool_{i:02d}", description=f"Does task number {i}.") for i in range(count)]


def pick(*names: str) -> object:
    return tool_calls(call("select_tools", {"tools": list(names)}))


def loop_tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


async def test_twelve_tools_need_no_selection(scripted_llm, make_llm):
    scripted_llm.script(text("hi"))
    log = EventLog()
    await ReActAgent(make_llm(), registry_of(*many_tools(12))).run("hi", on_event=log)
    assert len(scripted_llm.requests) == 1
    assert len(loop_tool_names(scripted_llm.requests[0])) == 12
    assert log.of("phase") == []


async def test_more_than_twelve_tools_triggers_selection_with_a_phase_event(scripted_llm, make_llm):
    scripted_llm.script(pick("tool_03", "tool_07"), text("hi"))
    log = EventLog()
    agent = ReActAgent(make_llm(), registry_of(*many_tools(13)))
    assert (agent.tool_selection_threshold, agent.tool_selection_max) == (12, 6)

    await agent.run("do task 3 and 7", on_event=log)

    assert log.of("phase") == [{"phase": "selecting_tools", "total_tools": 13}]
    assert log.labels()[0] == "phase"
    assert loop_tool_names(scripted_llm.requests[1]) == ["tool_03", "tool_07"]


async def test_selection_sees_a_compact_catalogue_and_the_query(scripted_llm, make_llm):
    scripted_llm.script(pick("tool_01"), text("hi"))
    await ReActAgent(make_llm(), registry_of(*many_tools(14))).run("do task 1")
    request = scripted_llm.requests[0]
    system = request["messages"][0]["content"]
    assert "- tool_05: Does task number 5." in system
    assert "properties" not in system  # names and one-line descriptions only
    assert request["messages"][-1]["content"] == "do task 1"
    parameters = request["tools"][0]["function"]["parameters"]
    assert parameters["properties"]["tools"] == {"type": "array", "items": {"type": "string"}}


async def test_selection_keeps_at_most_six_tools(scripted_llm, make_llm):
    scripted_llm.script(pick(*(f"tool_{i:02d}" for i in range(10))), text("hi"))
    await ReActAgent(make_llm(), registry_of(*many_tools(20))).run("everything")
    assert loop_tool_names(scripted_llm.requests[1]) == [f"tool_{i:02d}" for i in range(6)]


async def test_selection_drops_unknown_names_and_duplicates(scripted_llm, make_llm):
    scripted_llm.script(pick("tool_02", "made_up", "tool_02", "tool_04"), text("hi"))
    await ReActAgent(make_llm(), registry_of(*many_tools(13))).run("q")
    assert loop_tool_names(scripted_llm.requests[1]) == ["tool_02", "tool_04"]


async def test_selection_with_no_valid_name_falls_back_to_the_full_set(scripted_llm, make_llm):
    scripted_llm.script(pick("nothing_real"), text("hi"))
    result = await ReActAgent(make_llm(), registry_of(*many_tools(13))).run("q")
    assert len(loop_tool_names(scripted_llm.requests[1])) == 13
    assert result.answer == "hi"


async def test_selection_failure_is_not_fatal_and_falls_back_to_the_full_set(scripted_llm, make_llm):
    # tool_call + json_mode: the structured chain makes at most 5 calls, every one fails here
    scripted_llm.script(*(error(500) for _ in range(5)), text("still answered"))
    result = await ReActAgent(make_llm(), registry_of(*many_tools(13))).run("q")
    assert result.answer == "still answered"
    assert len(loop_tool_names(scripted_llm.requests[-1])) == 13


async def test_selection_in_json_mode_works_from_plain_text(scripted_llm, make_llm):
    scripted_llm.script(
        text('{"tools": ["tool_09"]}'),
        text(json.dumps({"action": {"type": "final_answer", "answer": "ok"}})),
    )
    await ReActAgent(make_llm(tool_call=False, json_mode=False), registry_of(*many_tools(13))).run("task 9")
    system = scripted_llm.requests[1]["messages"][0]["content"]
    assert "### tool_09" in system
    assert "### tool_08" not in system


async def test_selected_tools_are_the_only_ones_the_loop_can_run(scripted_llm, make_llm):
    tools = many_tools(13)
    scripted_llm.script(pick("tool_00"), tool_calls(call("tool_05", {"q": "x"})), text("done"))
    result = await ReActAgent(make_llm(), registry_of(*tools)).run("q")
    assert result.tool_calls[0].outcome == "unknown_tool"
    assert "Available tools: tool_00." in result.tool_calls[0].observation
    assert tools[5].calls == []


async def test_selection_threshold_and_maximum_are_configurable(scripted_llm, make_llm):
    scripted_llm.script(pick("tool_00", "tool_01", "tool_02"), text("hi"))
    agent = ReActAgent(
        make_llm(), registry_of(*many_tools(4)), tool_selection_threshold=3, tool_selection_max=2
    )
    await agent.run("q")
    assert loop_tool_names(scripted_llm.requests[1]) == ["tool_00", "tool_01"]


async def test_selection_usage_counts_toward_the_run(scripted_llm, make_llm):
    scripted_llm.script(pick("tool_00"), text("hi"))
    result = await ReActAgent(make_llm(), registry_of(*many_tools(13))).run("q")
    assert result.usage.calls == 2


async def test_a_pinned_tool_is_kept_whatever_the_selection(scripted_llm, make_llm):
    tools = many_tools(13)
    tools[9].pinned = True  # the skill tool is pinned: the system prompt names it
    scripted_llm.script(pick("tool_02"), text("hi"))
    await ReActAgent(make_llm(), registry_of(*tools)).run("q")
    assert loop_tool_names(scripted_llm.requests[1]) == ["tool_02", "tool_09"]
