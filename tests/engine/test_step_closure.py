"""The event stream's contract on the way out: every step it opened is closed before ``done``.

Whatever fails mid-run (the model refuses the second call, the model call is cancelled, a tool is cancelled),
each ``step`` start (thinking, iteration) has its done event before the run's ``done``; a step closed by a
failure says so in ``error``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agents.engine.events import Event
from agents.engine.react import ReActAgent
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import DEEPSEEK_THINKING, call, error, hang, text, tool_calls


def open_steps_at_done(events: list[Event]) -> list[tuple[str, Any]]:
    """The steps started and not yet done when the first ``done`` event came (all of them if none came)."""
    open_: dict[tuple[str, Any], None] = {}
    for event in events:
        if event.channel == "done":
            break
        if event.channel != "step" or event.data.get("type") not in ("thinking", "iteration"):
            continue
        key = (event.data["type"], event.data.get("tool_call_id") or event.data["iteration"])
        if event.data["status"] == "start":
            open_[key] = None
        else:
            open_.pop(key, None)
    else:
        raise AssertionError("the stream has no done event")
    return list(open_)


def json_call(tool: str, args: dict[str, Any]) -> str:
    return json.dumps(
        {"reasoning": "look it up", "action": {"type": "tool_call", "tool_name": tool, "tool_args": args}}
    )


FAILURES = {
    "the provider refuses the second call": lambda: error(400, message="bad request"),
    "the provider keeps failing": lambda: error(503),
}


@pytest.mark.parametrize("native", [True, False], ids=["native", "json"])
@pytest.mark.parametrize("failure", list(FAILURES), ids=list(FAILURES))
async def test_a_model_failure_mid_run_closes_its_thinking_step_before_done(
    scripted_llm, make_llm, native, failure
):
    first = (
        tool_calls(call("orders", {"q": "acme"}, id="c1"))
        if native
        else text(json_call("orders", {"q": "acme"}))
    )
    scripted_llm.script(first, FAILURES[failure]())
    agent = ReActAgent(
        make_llm(tool_call=native), registry_of(RecordingTool("orders")), use_native_tools=native
    )
    log = EventLog()

    result = await agent.run("ACME's orders?", on_event=log)
    await agent.stream_answer(result, on_event=log)

    assert result.stop_reason == "llm_error"
    assert open_steps_at_done(log.events) == []
    failed = log.steps("thinking", "done")[-1]
    assert (failed["iteration"], failed["reasoning"]) == (2, "")
    assert "answered with" in failed["error"] and "LLMError" not in failed["error"]  # what failed, no class
    assert "error" not in log.steps("thinking", "done")[0]  # a healthy step keeps the spec's shape


async def test_deepseek_refusing_a_run_without_its_reasoning_still_closes_every_step(scripted_llm, make_llm):
    """The issue's scenario, seen from outside: an endpoint set not to receive reasoning back is refused."""
    scripted_llm.profile = DEEPSEEK_THINKING
    scripted_llm.script(
        tool_calls(call("orders", {"q": "acme"}, id="c1")), text("3 orders"), text("3 orders.")
    )
    agent = ReActAgent(make_llm(reasoning_replay=False), registry_of(RecordingTool("orders")))
    log = EventLog()

    result = await agent.run("ACME's orders?", on_event=log)
    await agent.stream_answer(result, on_event=log)

    assert result.stop_reason == "llm_error" and scripted_llm.quirks["reasoning_back_refused"] == 1
    assert open_steps_at_done(log.events) == []


async def test_cancelling_a_run_while_the_model_thinks_closes_the_thinking_step_before_done(
    scripted_llm, make_llm
):
    scripted_llm.script(hang(30))
    agent = ReActAgent(make_llm(), registry_of(RecordingTool("orders")))
    log = EventLog()

    task = asyncio.create_task(agent.run("ACME's orders?", on_event=log))
    await scripted_llm.until_received(1)
    agent.cancel()
    result = await task

    assert result.cancelled
    assert open_steps_at_done(log.events) == []
    assert log.steps("thinking", "done")[-1]["error"] == "cancelled"


async def test_cancelling_a_run_while_a_tool_runs_closes_its_iteration_step_before_done(
    scripted_llm, make_llm
):
    scripted_llm.script(tool_calls(call("orders", {"q": "acme"}, id="c1")))
    tool = RecordingTool("orders", delay=30)
    agent = ReActAgent(make_llm(), registry_of(tool))
    log = EventLog()

    task = asyncio.create_task(agent.run("ACME's orders?", on_event=log))
    while not log.steps("iteration", "start"):  # noqa: ASYNC110 - waiting on our own event log
        await asyncio.sleep(0.01)
    agent.cancel()
    result = await task

    assert result.cancelled
    assert open_steps_at_done(log.events) == []
    closed = log.steps("iteration", "done")[-1]
    assert (closed["tool_call_id"], closed["error"], closed["outcome"]) == ("c1", "cancelled", "cancelled")
