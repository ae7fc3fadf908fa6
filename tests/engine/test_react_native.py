"""Native function-calling mode: mode choice, parallel tool calls, ordering, timeouts, tool errors."""

from __future__ import annotations

import asyncio
import json

import pytest

from agents.engine.react import ReActAgent
from agents.engine.tools import ToolResult
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, text, tool_calls


def assert_tool_results_follow_their_calls(requests: list[dict]) -> None:
    """Every assistant tool_calls message is immediately followed by exactly its tool messages."""
    for request in requests:
        messages = request["messages"]
        for index, message in enumerate(messages):
            if message["role"] == "assistant" and message.get("tool_calls"):
                ids = [c["id"] for c in message["tool_calls"]]
                following = messages[index + 1 : index + 1 + len(ids)]
                assert [m["role"] for m in following] == ["tool"] * len(ids)
                assert [m["tool_call_id"] for m in following] == ids
            if message["role"] == "tool":
                assert messages[index - 1]["role"] in ("assistant", "tool")


def test_native_mode_is_active_only_with_use_native_tools_and_a_tool_calling_model(make_llm):
    assert ReActAgent(make_llm(tool_call=True), registry_of())._native_mode_active
    assert not ReActAgent(make_llm(tool_call=True), registry_of(), use_native_tools=False)._native_mode_active
    assert not ReActAgent(make_llm(tool_call=False), registry_of())._native_mode_active


async def test_native_mode_passes_tools_through_the_tools_parameter(scripted_llm, make_llm):
    scripted_llm.script(text("hello"))
    await ReActAgent(make_llm(), registry_of(RecordingTool("search"))).run("hi")
    request = scripted_llm.requests[0]
    assert [t["function"]["name"] for t in request["tools"]] == ["search"]
    assert "response_format" not in request
    assert "## Tools" not in request["messages"][0]["content"]


async def test_without_native_support_the_agent_falls_back_to_json_mode(scripted_llm, make_llm):
    scripted_llm.script(text('{"reasoning": "r", "action": {"type": "final_answer", "answer": "hi"}}'))
    result = await ReActAgent(make_llm(tool_call=False), registry_of(RecordingTool("search"))).run("hi")
    request = scripted_llm.requests[0]
    assert "tools" not in request
    assert request["response_format"] == {"type": "json_object"}
    assert "### search" in request["messages"][0]["content"]
    assert result.answer == "hi"


async def test_parallel_tool_calls_run_concurrently_and_results_keep_the_original_order(
    scripted_llm, make_llm
):
    gate = asyncio.Event()
    slow = RecordingTool("slow", gate=gate)

    class Fast(RecordingTool):
        async def execute(self, ctx, /, **kwargs):
            result = await super().execute(ctx, **kwargs)
            gate.set()  # the slow call, started first, can only finish after this one ran concurrently
            return result

    fast = Fast("fast")
    scripted_llm.script(
        tool_calls(
            call("slow", {"q": "1"}, id="a"),
            call("fast", {"q": "2"}, id="b"),
            call("slow", {"q": "3"}, id="c"),
        ),
        text("done"),
    )
    result = await ReActAgent(make_llm(), registry_of(slow, fast)).run("go")
    assert [r.tool_call_id for r in result.tool_calls] == ["a", "b", "c"]
    sent = scripted_llm.requests[1]["messages"]
    assert [(m["tool_call_id"], m["content"]) for m in sent[-3:]] == [
        ("a", 'slow: {"q": "1"}'),
        ("b", 'fast: {"q": "2"}'),
        ("c", 'slow: {"q": "3"}'),
    ]
    assert slow.max_running == 2


async def test_at_most_four_tools_run_in_parallel_by_default(scripted_llm, make_llm):
    tool = RecordingTool("search", delay=0.02)
    scripted_llm.script(tool_calls(*(call("search", {"q": str(i)}) for i in range(7))), text("done"))
    agent = ReActAgent(make_llm(), registry_of(tool))
    result = await agent.run("go")
    assert len(tool.calls) == 7
    assert tool.max_running == 4
    assert [r.outcome for r in result.tool_calls] == ["ok"] * 7


async def test_max_parallel_tools_is_configurable(scripted_llm, make_llm):
    tool = RecordingTool("search", delay=0.02)
    scripted_llm.script(tool_calls(*(call("search", {"q": str(i)}) for i in range(5))), text("done"))
    await ReActAgent(make_llm(), registry_of(tool), max_parallel_tools=2).run("go")
    assert tool.max_running == 2


async def test_tool_call_and_tool_result_ordering_holds_in_every_request(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(call("search", {"q": "a"}, id="x1"), call("search", {"q": "b"}, id="x2")),
        tool_calls(call("search", {"q": "a"}, id="y1")),
        tool_calls(call("search", {"q": "a"}, id="z1")),  # the third identical call adds a cycle warning
        tool_calls(call("missing", {}, id="w1"), call("search", {"q": 5}, id="w2")),
        text("done"),
        text("done, checked"),
    )
    await ReActAgent(make_llm(), registry_of(RecordingTool()), self_reflection_interval=2).run("go")
    assert len(scripted_llm.requests) == 6
    assert_tool_results_follow_their_calls(scripted_llm.requests)


def test_default_timeouts_are_60_seconds_per_tool_and_90_per_batch(make_llm):
    agent = ReActAgent(make_llm(), registry_of())
    assert agent._runner.tool_timeout == 60.0
    assert agent._runner.batch_timeout == 90.0
    assert agent._runner.max_parallel == 4


async def test_a_tool_over_its_timeout_is_cancelled_with_a_timed_out_observation(scripted_llm, make_llm):
    hanging = RecordingTool("hang", gate=asyncio.Event())
    quick = RecordingTool("quick")
    scripted_llm.script(tool_calls(call("hang", {"q": "1"}), call("quick", {"q": "2"})), text("partial"))
    agent = ReActAgent(make_llm(), registry_of(hanging, quick), tool_timeout=0.05)
    result = await agent.run("go")
    hang_record, quick_record = result.tool_calls
    assert hang_record.outcome == "timeout"
    assert "timed out after 0.05 s" in hang_record.observation
    assert quick_record.outcome == "ok"
    assert hanging.cancelled == 1
    assert result.answer == "partial"


async def test_a_tools_own_timeout_overrides_the_agents(scripted_llm, make_llm):
    tool = RecordingTool("slow", delay=0.2, timeout=0.02)
    scripted_llm.script(tool_calls(call("slow", {"q": "1"})), text("done"))
    result = await ReActAgent(make_llm(), registry_of(tool), tool_timeout=10).run("go")
    assert result.tool_calls[0].outcome == "timeout"
    assert "0.02 s" in result.tool_calls[0].observation


async def test_the_batch_timeout_cuts_calls_still_running_and_keeps_finished_results(scripted_llm, make_llm):
    hanging = RecordingTool("hang", gate=asyncio.Event())
    quick = RecordingTool("quick")
    scripted_llm.script(tool_calls(call("quick", {"q": "1"}), call("hang", {"q": "2"})), text("done"))
    agent = ReActAgent(make_llm(), registry_of(hanging, quick), tool_timeout=10, batch_timeout=0.05)
    result = await agent.run("go")
    assert [r.outcome for r in result.tool_calls] == ["ok", "timeout"]
    assert "timed out" in result.tool_calls[1].observation
    assert hanging.cancelled == 1


async def test_a_single_call_is_also_bounded_by_the_batch_timeout(scripted_llm, make_llm):
    hanging = RecordingTool("hang", gate=asyncio.Event())
    scripted_llm.script(tool_calls(call("hang", {"q": "1"})), text("done"))
    result = await ReActAgent(make_llm(), registry_of(hanging), tool_timeout=10, batch_timeout=0.05).run("go")
    assert result.tool_calls[0].outcome == "timeout"


async def test_a_tool_that_raises_becomes_an_error_observation_and_the_loop_continues(scripted_llm, make_llm):
    tool = RecordingTool("fetch", raises=ConnectionError("host unreachable"))
    scripted_llm.script(tool_calls(call("fetch", {"q": "x"})), text("The service is unreachable."))
    log = EventLog()
    result = await ReActAgent(make_llm(), registry_of(tool)).run("fetch x", on_event=log)
    record = result.tool_calls[0]
    assert record.outcome == "error"
    assert record.observation == "Error: the tool failed: ConnectionError: host unreachable"
    assert log.steps("iteration", "done")[0]["error"] == "the tool failed: ConnectionError: host unreachable"
    assert result.answer == "The service is unreachable."


async def test_a_tool_result_flagged_as_error_is_reported_as_an_error(scripted_llm, make_llm):
    tool = RecordingTool("fetch", result=ToolResult.failure("404 not found"))
    scripted_llm.script(tool_calls(call("fetch", {"q": "x"})), text("Not found."))
    result = await ReActAgent(make_llm(), registry_of(tool)).run("fetch x")
    assert (result.tool_calls[0].outcome, result.tool_calls[0].error) == ("error", "404 not found")


async def test_a_hallucinated_tool_name_gets_an_observation_listing_the_available_tools(
    scripted_llm, make_llm
):
    scripted_llm.script(tool_calls(call("web_search", {"q": "x"})), text("ok"))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool("search"), RecordingTool("fetch"))).run(
        "go"
    )
    observation = scripted_llm.requests[1]["messages"][-1]["content"]
    assert observation == "Error: there is no tool named 'web_search'. Available tools: search, fetch."
    assert result.tool_calls[0].outcome == "unknown_tool"


async def test_invalid_arguments_get_a_structured_error_and_the_tool_does_not_run(scripted_llm, make_llm):
    tool = RecordingTool("search")
    scripted_llm.script(tool_calls(call("search", {"query": "x"})), text("ok"))
    result = await ReActAgent(make_llm(), registry_of(tool)).run("go")
    assert tool.calls == []
    error = json.loads(scripted_llm.requests[1]["messages"][-1]["content"])
    assert error["error"] == "invalid_arguments" and error["tool"] == "search"
    assert {p["path"] for p in error["problems"]} == {"$"}
    assert any("'q' is a required property" in p["message"] for p in error["problems"])
    assert result.tool_calls[0].outcome == "invalid_args"


async def test_arguments_that_are_not_json_get_an_error_observation(scripted_llm, make_llm):
    tool = RecordingTool("search")
    scripted_llm.script(tool_calls(call("search", '{"q": "x"')), text("ok"))
    result = await ReActAgent(make_llm(), registry_of(tool)).run("go")
    assert tool.calls == []
    assert "not valid JSON" in result.tool_calls[0].error


async def test_consecutive_same_role_messages_are_merged_but_tool_messages_never_are(scripted_llm, make_llm):
    history = [
        {"role": "user", "content": "first"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "reply"},
    ]
    scripted_llm.script(
        tool_calls(call("search", {"q": "a"}, id="t1"), call("search", {"q": "b"}, id="t2")), text("ok")
    )
    result = await ReActAgent(make_llm(), registry_of(RecordingTool()), cycle_detection_threshold=1).run(
        "third", history=history
    )
    first = scripted_llm.requests[0]["messages"]
    assert [m["role"] for m in first] == ["system", "user", "assistant", "user"]
    assert first[1]["content"] == "first\n\nsecond"
    second = scripted_llm.requests[1]["messages"]
    assert [m["role"] for m in second[-4:]] == ["assistant", "tool", "tool", "user"]
    assert second[-1]["content"].count("identical arguments") == 1  # the warnings merged into one message
    assert len(result.messages) > len(second)  # the history itself keeps every message unmerged


async def test_an_empty_reply_gets_one_nudge_then_ends_with_a_summary(scripted_llm, make_llm):
    scripted_llm.script(text(""), text(""))
    result = await ReActAgent(make_llm(), registry_of()).run("go")
    assert result.stop_reason == "empty_response"
    assert "empty" in result.answer
    assert "Your previous reply was empty" in scripted_llm.requests[1]["messages"][-1]["content"]


async def test_an_empty_reply_followed_by_an_answer_recovers(scripted_llm, make_llm):
    scripted_llm.script(text(""), text("fine"))
    result = await ReActAgent(make_llm(), registry_of()).run("go")
    assert (result.answer, result.stop_reason) == ("fine", "final_answer")


@pytest.mark.parametrize("with_content", [True, False])
async def test_thinking_reasoning_is_the_text_beside_the_tool_calls_or_reasoning_content(
    scripted_llm, make_llm, with_content
):
    reply = tool_calls(
        call("search", {"q": "a"}),
        content="I will search." if with_content else None,
        reasoning_content="chain of thought",
    )
    scripted_llm.script(reply, text("done", reasoning_content="final thoughts"))
    log = EventLog()
    await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go", on_event=log)
    reasonings = [s["reasoning"] for s in log.steps("thinking", "done")]
    assert reasonings == ["I will search." if with_content else "chain of thought", "final thoughts"]


async def test_a_tool_call_id_prefix_makes_native_ids_unique_and_keeps_the_pairs_matching(
    scripted_llm, make_llm
):
    scripted_llm.script(tool_calls(call("search", {"q": "a"}, id="call_1")), text("done"))
    events = EventLog()
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), tool_call_id_prefix="r1.2.")
    result = await agent.run("go", on_event=events)
    assert [r.tool_call_id for r in result.tool_calls] == ["r1.2.call_1"]
    assert {e.data.get("tool_call_id") for e in events.events if e.data.get("type") == "iteration"} == {
        "r1.2.call_1"
    }
    second = scripted_llm.requests[1]["messages"]
    assert [c["id"] for m in second for c in m.get("tool_calls") or ()] == ["r1.2.call_1"]
    assert [m["tool_call_id"] for m in second if m["role"] == "tool"] == ["r1.2.call_1"]
    assert_tool_results_follow_their_calls(scripted_llm.requests)
