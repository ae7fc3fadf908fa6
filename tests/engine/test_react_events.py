"""The event stream: every event of the spec's table, its payload fields in order, and the adapters."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from agents.engine import events
from agents.engine.events import Event, EventStream, iterate_events
from agents.engine.react import ReActAgent
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, text, tool_calls


async def run_and_answer(agent: ReActAgent, query: str, log: EventLog) -> str:
    result = await agent.run(query, on_event=log)
    return await agent.stream_answer(result, on_event=log)


async def test_a_native_run_emits_the_spec_sequence_of_events(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(call("search", {"q": "x"}, id="c1"), content="Let me search."),
        text("x is 42"),
        text("**x** is 42.", chunk_size=4),
    )
    log = EventLog()
    answer = await run_and_answer(ReActAgent(make_llm(), registry_of(RecordingTool())), "what is x?", log)
    assert answer == "**x** is 42."
    assert log.labels() == [
        "step:thinking:start",
        "step:thinking:done",
        "step:iteration:start",
        "step:iteration:done",
        "step:thinking:start",
        "step:thinking:done",
        "step:answer:start",
        "answer:start",
        "answer:delta",
        "answer:delta",
        "answer:delta",
        "answer:done",
        "done",
    ]


async def test_step_payloads_have_the_spec_fields_in_order(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(call("search", {"q": "x"}, id="c1"), content="Let me search."), text("x is 42")
    )
    log = EventLog()
    await ReActAgent(make_llm(), registry_of(RecordingTool())).run("what is x?", on_event=log)
    thinking_start, thinking_done, iteration_start, iteration_done, *_, answer_signal = log.steps()
    assert thinking_start == {"type": "thinking", "status": "start", "iteration": 1}
    assert thinking_done == {
        "type": "thinking",
        "status": "done",
        "iteration": 1,
        "reasoning": "Let me search.",
    }
    assert list(iteration_start)[:5] == ["type", "status", "iteration", "tool_name", "tool_args"]
    assert iteration_start["tool_name"] == "search" and iteration_start["tool_args"] == {"q": "x"}
    assert iteration_start["tool_call_id"] == "c1"
    assert list(iteration_done)[:7] == [
        "type",
        "status",
        "iteration",
        "tool_name",
        "observation",
        "error",
        "iter_elapsed",
    ]
    assert iteration_done["observation"] == 'search: {"q": "x"}'
    assert iteration_done["error"] is None
    assert isinstance(iteration_done["iter_elapsed"], float) and iteration_done["iter_elapsed"] >= 0
    assert iteration_done["tool_call_id"] == "c1"
    assert answer_signal == {"type": "answer", "status": "start"}


async def test_answer_and_done_payloads_have_the_spec_fields(scripted_llm, make_llm):
    scripted_llm.script(text("hi"), text("Hello!", chunk_size=3))
    log = EventLog()
    await run_and_answer(ReActAgent(make_llm(), registry_of()), "hi", log)
    answer_events = log.of("answer")
    assert answer_events[0] == {"status": "start"}
    assert answer_events[1] == {"status": "delta", "content": "Hel"}
    assert answer_events[-1]["status"] == "done"
    (done,) = log.of("done")
    assert list(done)[:4] == ["answer", "iterations", "usage", "elapsed"]
    assert done["answer"] == "Hello!" and done["iterations"] == 1
    assert done["usage"]["calls"] == 2  # the loop's call and the synthesis stream
    assert done["cancelled"] is False


async def test_parallel_calls_emit_starts_in_order_then_dones_in_order_with_their_call_ids(
    scripted_llm, make_llm
):
    scripted_llm.script(
        tool_calls(call("search", {"q": "a"}, id="a1"), call("search", {"q": "b"}, id="b2")), text("done")
    )
    log = EventLog()
    await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go", on_event=log)
    iterations = [(s["status"], s["tool_call_id"]) for s in log.steps("iteration")]
    assert iterations == [("start", "a1"), ("start", "b2"), ("done", "a1"), ("done", "b2")]
    assert all(s["iteration"] == 1 for s in log.steps("iteration"))


async def test_artifacts_reach_the_ui_in_the_iteration_done_event(scripted_llm, make_llm):
    from agents.engine.tools import Artifact, ToolResult

    html = "<h1>Report</h1>"
    tool = RecordingTool(
        "report", result=ToolResult(content=html, artifacts=(Artifact("r.html", "text/html", html),))
    )
    scripted_llm.script(tool_calls(call("report", {"q": "q3"})), text("See the report."))
    log = EventLog()
    await ReActAgent(make_llm(), registry_of(tool)).run("report", on_event=log)
    done = log.steps("iteration", "done")[0]
    assert done["artifacts"] == [{"name": "r.html", "mime_type": "text/html", "content": html}]
    assert done["observation"].startswith("[Artifact generated: r.html]")
    assert html not in scripted_llm.requests[1]["messages"][-1]["content"]  # the model sees only the summary


def test_events_are_frozen_values():
    event = events.follow_up_taken("more")
    assert event == Event("inject", {"type": "inject", "content": "more"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.channel = "step"  # type: ignore[misc]
    assert event.as_dict() == {"event": "inject", "data": {"type": "inject", "content": "more"}}


async def test_a_failing_event_callback_never_breaks_the_run(scripted_llm, make_llm):
    async def broken(event: Event) -> None:
        raise ConnectionError("socket closed")

    scripted_llm.script(text("fine"))
    result = await ReActAgent(make_llm(), registry_of()).run("go", on_event=broken)
    assert result.answer == "fine"


async def test_agent_events_iterates_the_run_and_the_answer(scripted_llm, make_llm):
    scripted_llm.script(text("draft"), text("final answer"))
    agent = ReActAgent(make_llm(), registry_of())
    received = [event async for event in agent.events("q")]
    assert received[0].data["type"] == "thinking"
    assert received[-1].channel == "done"
    assert received[-1].data["answer"] == "final answer"


async def test_leaving_the_event_iterator_early_cancels_the_run(scripted_llm, make_llm):
    gate = asyncio.Event()
    tool = RecordingTool("slow", gate=gate)
    scripted_llm.script(tool_calls(call("slow", {"q": "1"})))
    agent = ReActAgent(make_llm(), registry_of(tool))
    stream = agent.events("go")
    async for event in stream:
        if event.data.get("type") == "iteration":
            break
    await stream.aclose()
    assert tool.cancelled == 1


async def test_iterate_events_reraises_the_producers_error_after_its_events():
    async def producer(on_event):
        await on_event(events.follow_up_taken("one"))
        raise ValueError("producer failed")

    seen = []
    with pytest.raises(ValueError, match="producer failed"):
        async for event in iterate_events(producer):
            seen.append(event)
    assert [e.data["content"] for e in seen] == ["one"]


async def test_event_stream_can_be_used_directly_as_on_event():
    stream = EventStream()
    await stream(events.answer_start())
    stream.close()
    assert [e.channel async for e in stream] == ["answer"]
