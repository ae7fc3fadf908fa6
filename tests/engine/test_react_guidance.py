"""Cycle detection, self-reflection and the completion checklist."""

from __future__ import annotations

import json

from agents.engine.react import ReActAgent
from tests.engine.doubles import RecordingTool, registry_of
from tests.fakes.openai_server import call, text, tool_calls

WARNING = (
    "You have called `search` with identical arguments 3 times and received the same result. "
    "Please try a different approach or tool."
)


def search(q: str, **extra: object) -> object:
    return tool_calls(call("search", {"q": q, **extra}))


def contents(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if isinstance(m.get("content"), str)]


# --- cycle detection ----------------------------------------------------------------------------


async def test_cycle_warning_injected_after_three_identical_calls(scripted_llm, make_llm):
    scripted_llm.script(search("x"), search("x"), search("x"), text("stop"), text("stop"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go")
    third = scripted_llm.requests[3]["messages"]
    assert [m["role"] for m in third[-3:]] == ["assistant", "tool", "user"]  # after the tool messages
    assert third[-1]["content"] == WARNING
    assert sum(WARNING in c for c in contents(result.messages)) == 1
    assert not any("identical arguments" in c for c in contents(scripted_llm.requests[2]["messages"]))


async def test_identical_means_same_tool_and_canonical_arguments(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(call("search", '{"q": "x", "n": 1}')),
        tool_calls(call("search", '{"n": 1, "q": "x"}')),  # same arguments, other key order
        tool_calls(call("search", '{"q": "y", "n": 1}')),
        text("stop"),
    )
    tool = RecordingTool(parameters={"type": "object"})
    result = await ReActAgent(make_llm(), registry_of(tool), completion_check=False).run("go")
    assert not any("identical arguments" in c for c in contents(result.messages))
    scripted_llm.reset()
    scripted_llm.script(
        tool_calls(call("search", '{"q": "x", "n": 1}')),
        tool_calls(call("search", '{"n": 1, "q": "x"}')),
        tool_calls(call("search", '{"q":"x","n":1}')),
        text("stop"),
    )
    result = await ReActAgent(make_llm(), registry_of(tool), completion_check=False).run("go")
    assert any("identical arguments 3 times" in c for c in contents(result.messages))


async def test_cycle_detection_threshold_can_be_set_by_environment(scripted_llm, make_llm, monkeypatch):
    monkeypatch.setenv("REACT_CYCLE_DETECTION_THRESHOLD", "2")
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), completion_check=False)
    assert agent.cycle_detection_threshold == 2
    scripted_llm.script(search("x"), search("x"), text("stop"))
    result = await agent.run("go")
    assert any("identical arguments 2 times" in c for c in contents(result.messages))


def test_cycle_detection_threshold_defaults_to_three(make_llm, monkeypatch):
    monkeypatch.delenv("REACT_CYCLE_DETECTION_THRESHOLD", raising=False)
    assert ReActAgent(make_llm(), registry_of()).cycle_detection_threshold == 3


async def test_cycle_tracker_resets_for_every_run(scripted_llm, make_llm):
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), completion_check=False)
    scripted_llm.script(search("x"), search("x"), text("stop"))
    await agent.run("first")
    scripted_llm.script(search("x"), text("stop"))
    result = await agent.run("second")
    assert not any("identical arguments" in c for c in contents(result.messages))


# --- self-reflection ----------------------------------------------------------------------------


async def test_self_reflection_injected_after_every_six_real_tool_calls(scripted_llm, make_llm):
    scripted_llm.script(*(search(str(i)) for i in range(7)), text("stop"), text("stop"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go")
    sixth = scripted_llm.requests[6]["messages"]
    assert [m["role"] for m in sixth[-3:]] == ["assistant", "tool", "user"]
    assert sixth[-1]["content"].startswith("[Self-reflection] You have made 6 tool calls so far.")
    assert "original goal" in sixth[-1]["content"]
    assert sum(c.startswith("[Self-reflection]") for c in contents(result.messages)) == 1
    assert not any("[Self-reflection]" in c for c in contents(scripted_llm.requests[5]["messages"]))


async def test_self_reflection_comes_after_all_tool_results_of_a_parallel_batch(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(*(call("search", {"q": str(i)}, id=f"c{i}") for i in range(4))),
        tool_calls(*(call("search", {"q": str(i)}, id=f"d{i}") for i in range(4, 8))),
        text("stop"),
        text("stop"),
    )
    await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go")
    sent = scripted_llm.requests[2]["messages"]
    assert [m["role"] for m in sent[-6:]] == ["assistant", "tool", "tool", "tool", "tool", "user"]
    assert sent[-1]["content"].startswith("[Self-reflection] You have made 8 tool calls")


async def test_parse_retries_do_not_count_toward_self_reflection(scripted_llm, make_llm):
    act = json.dumps(
        {"reasoning": "r", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "a"}}}
    )
    scripted_llm.script(
        text("junk"), text(act), text("junk"), text(act.replace('"a"', '"b"')), text('{"final_answer": "x"}')
    )
    result = await ReActAgent(
        make_llm(tool_call=False),
        registry_of(RecordingTool()),
        self_reflection_interval=3,
        completion_check=False,
    ).run("go")
    assert not any("[Self-reflection]" in c for c in contents(result.messages))
    assert len(result.tool_calls) == 2


def test_self_reflection_interval_defaults_to_six(make_llm):
    assert ReActAgent(make_llm(), registry_of()).self_reflection_interval == 6


# --- completion checklist -----------------------------------------------------------------------


async def test_completion_checklist_injected_once_after_three_tools(scripted_llm, make_llm):
    scripted_llm.script(search("a"), search("b"), search("c"), text("draft"), search("d"), text("final"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go")
    checklist = scripted_llm.requests[4]["messages"][-1]["content"]
    assert checklist.startswith("[Completion check]")
    for question in (
        "Does the answer fully address the original question?",
        "Are the key facts verified by tool results?",
        "Are there contradictions in the information gathered?",
    ):
        assert question in checklist
    assert scripted_llm.requests[4]["messages"][-2] == {"role": "assistant", "content": "draft"}
    assert (result.answer, result.iterations) == ("final", 6)  # no second checklist


async def test_no_completion_checklist_below_three_tools(scripted_llm, make_llm):
    scripted_llm.script(search("a"), search("b"), text("answer"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go")
    assert (result.answer, result.iterations) == ("answer", 3)


async def test_no_completion_checklist_for_an_answer_without_tools_even_with_threshold_zero(
    scripted_llm, make_llm, monkeypatch
):
    monkeypatch.setenv("REACT_COMPLETION_CHECK_MIN_TOOLS", "0")
    scripted_llm.script(text("hello"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool())).run("hi")
    assert (result.answer, result.iterations) == ("hello", 1)


async def test_completion_check_min_tools_can_be_set_by_environment(scripted_llm, make_llm, monkeypatch):
    monkeypatch.setenv("REACT_COMPLETION_CHECK_MIN_TOOLS", "1")
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()))
    assert agent.completion_check_min_tools == 1
    scripted_llm.script(search("a"), text("draft"), text("final"))
    result = await agent.run("go")
    assert scripted_llm.requests[2]["messages"][-1]["content"].startswith("[Completion check]")
    assert result.answer == "final"


def test_completion_check_min_tools_defaults_to_three(make_llm, monkeypatch):
    monkeypatch.delenv("REACT_COMPLETION_CHECK_MIN_TOOLS", raising=False)
    assert ReActAgent(make_llm(), registry_of()).completion_check_min_tools == 3


async def test_completion_check_can_be_disabled_per_agent(scripted_llm, make_llm):
    scripted_llm.script(search("a"), search("b"), search("c"), text("answer"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool()), completion_check=False).run("go")
    assert (result.answer, result.iterations) == ("answer", 4)


async def test_completion_checklist_in_json_mode(scripted_llm, make_llm):
    def act(q: str) -> object:
        return text(
            json.dumps({"action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": q}}})
        )

    done = text(json.dumps({"action": {"type": "final_answer", "answer": "A"}}))
    scripted_llm.script(act("a"), act("b"), act("c"), done, done)
    result = await ReActAgent(make_llm(tool_call=False), registry_of(RecordingTool())).run("go")
    assert scripted_llm.requests[4]["messages"][-1]["content"].startswith("[Completion check]")
    assert result.iterations == 5
