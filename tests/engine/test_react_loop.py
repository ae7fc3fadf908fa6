"""The loop's limits and failures: iteration cap, token budget, LLM errors, cancellation, context, logs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agents.engine.context import ContextGuard
from agents.engine.react import ReActAgent
from agents.engine.tools import ToolResult
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, context_length_error, error, hang, malformed, text, tool_calls


def numbered_search(body: dict) -> object:
    """A new search on every request (distinct arguments, so no cycle warning)."""
    return tool_calls(call("search", {"q": f"page {len(body['messages'])}"}))


# --- iteration cap ------------------------------------------------------------------------------


async def test_fifty_iteration_cap_ends_with_a_summary_of_the_tools_called(scripted_llm, make_llm):
    scripted_llm.script(*([numbered_search] * 60))
    agent = ReActAgent(make_llm(), registry_of(RecordingTool("search")))
    assert agent.max_iterations == 50
    log = EventLog()

    result = await agent.run("research everything", on_event=log)

    assert len(scripted_llm.requests) == 50
    assert (result.iterations, result.stop_reason) == (50, "max_iterations")
    assert "limit of 50 iterations" in result.answer
    assert "`search`: called 50 time(s), 50 succeeded, 0 failed" in result.answer
    assert log.steps("answer", "start") == [{"type": "answer", "status": "start"}]


async def test_iteration_cap_summary_reports_failed_tools(scripted_llm, make_llm):
    failing = RecordingTool("fetch", result=ToolResult.failure("HTTP 503"))
    scripted_llm.script(tool_calls(call("fetch", {"q": "a"})), tool_calls(call("fetch", {"q": "b"})))
    result = await ReActAgent(make_llm(), registry_of(failing), max_iterations=2).run("get it")
    assert result.stop_reason == "max_iterations"
    assert "`fetch`: called 2 time(s), 0 succeeded, 2 failed (last error: HTTP 503)" in result.answer


async def test_fallback_summary_follows_the_language_of_the_question(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("search", {"q": "a"})))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool()), max_iterations=1).run("查一下发票")
    assert "已达到 1 次迭代上限" in result.answer
    assert "调用 1 次，成功 1 次" in result.answer


# --- token budget -------------------------------------------------------------------------------


async def test_token_budget_is_unlimited_by_default(make_llm):
    assert ReActAgent(make_llm(), registry_of()).token_budget is None


async def test_token_budget_stops_the_loop_with_the_summarising_fallback(scripted_llm, make_llm):
    usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    scripted_llm.script(*(tool_calls(call("search", {"q": str(i)}), usage=usage) for i in range(5)))
    result = await ReActAgent(make_llm(), registry_of(RecordingTool()), token_budget=100).run("go")
    assert len(scripted_llm.requests) == 2
    assert result.stop_reason == "token_budget"
    assert result.usage.total_tokens == 120
    assert "token budget (100 tokens)" in result.answer
    assert "`search`: called 2 time(s)" in result.answer


# --- LLM failures -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [error(500, message="upstream exploded"), malformed(b"this is not json"), error(401, message="bad key")],
    ids=["http-500", "malformed-body", "http-401"],
)
async def test_an_llm_failure_ends_the_run_with_a_clear_answer_not_an_exception(
    scripted_llm, make_llm, reply
):
    scripted_llm.script(tool_calls(call("search", {"q": "a"})), reply)
    result = await ReActAgent(make_llm(), registry_of(RecordingTool())).run("go")
    assert result.stop_reason == "llm_error"
    assert result.answer.startswith("I could not finish because of the language model: ")
    assert "`search`: called 1 time(s), 1 succeeded" in result.answer


async def test_an_llm_timeout_ends_the_run_with_llm_error(scripted_llm, make_llm):
    scripted_llm.script(hang(5))
    result = await ReActAgent(make_llm(timeout=0.2), registry_of()).run("go")
    assert result.stop_reason == "llm_error"
    assert "because of the language model" in result.answer


async def test_an_error_in_the_first_call_still_gives_a_result(scripted_llm, make_llm):
    scripted_llm.script(error(503))
    result = await ReActAgent(make_llm(), registry_of()).run("go")
    assert (result.stop_reason, result.iterations, result.tool_calls) == ("llm_error", 1, ())


# --- cancellation -------------------------------------------------------------------------------


async def test_agent_cancel_stops_the_run_cleanly_and_returns_a_cancelled_result(scripted_llm, make_llm):
    gate = asyncio.Event()
    tool = RecordingTool("slow", gate=gate)
    scripted_llm.script(tool_calls(call("slow", {"q": "1"}), call("slow", {"q": "2"})), text("never"))
    agent = ReActAgent(make_llm(), registry_of(tool))
    log = EventLog()
    started = asyncio.Event()

    async def on_event(event):
        await log(event)
        if event.data.get("type") == "iteration" and event.data.get("status") == "start":
            started.set()

    run = asyncio.create_task(agent.run("go", on_event=on_event))
    await started.wait()
    await tool.until_running(2)  # both calls in flight
    agent.cancel()
    result = await run

    assert result.cancelled and result.stop_reason == "cancelled"
    assert tool.cancelled == 2 and tool.running == 0  # in-flight tools were cancelled
    assert log.of("done") == [
        {
            "answer": "",
            "iterations": 1,
            "usage": result.usage.as_dict(),
            "elapsed": result.elapsed,
            "cancelled": True,
            "stop_reason": "cancelled",
        }
    ]
    assert len(scripted_llm.requests) == 1
    assert await agent.stream_answer(result, on_event=log) == ""  # nothing to synthesise
    assert log.channels()[-1] == "done"


async def test_cancelling_the_task_propagates_cancelled_error_after_cleanup(scripted_llm, make_llm):
    gate = asyncio.Event()
    tool = RecordingTool("slow", gate=gate)
    scripted_llm.script(tool_calls(call("slow", {"q": "1"})))
    agent = ReActAgent(make_llm(), registry_of(tool))
    run = asyncio.create_task(agent.run("go"))
    await tool.until_running(1)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert tool.cancelled == 1
    scripted_llm.script(text("again"))
    assert (await agent.run("next")).answer == "again"  # the agent is usable afterwards


async def test_cancel_during_the_llm_call_returns_a_cancelled_result(scripted_llm, make_llm):
    scripted_llm.script(hang(5))
    agent = ReActAgent(make_llm(), registry_of())
    thinking = asyncio.Event()

    async def on_event(event):
        if event.data.get("type") == "thinking":
            thinking.set()

    run = asyncio.create_task(agent.run("go", on_event=on_event))
    await thinking.wait()
    agent.cancel()
    result = await asyncio.wait_for(run, 2)
    assert result.cancelled


async def test_an_agent_runs_one_run_at_a_time(scripted_llm, make_llm):
    scripted_llm.script(hang(0.3, then=text("first")))
    agent = ReActAgent(make_llm(), registry_of())
    first = asyncio.create_task(agent.run("one"))
    await asyncio.sleep(0)  # let the first run start
    with pytest.raises(RuntimeError, match="already running"):
        await agent.run("two")
    assert (await first).answer == "first"


# --- context guard ------------------------------------------------------------------------------


def long_history(pairs: int, chars: int) -> list[dict]:
    history = []
    for i in range(pairs):
        history.append({"role": "user", "content": f"question {i} " + "q" * chars})
        history.append({"role": "assistant", "content": f"answer {i} " + "a" * chars})
    return history


async def test_the_context_guard_compacts_before_the_llm_call_and_a_compact_event_is_emitted(
    scripted_llm, make_llm
):
    llm = make_llm()
    guard = ContextGuard(llm, context_window=3000, summary_reserve=500, safety_margin=100)
    scripted_llm.script(text("Earlier: questions 0-2 were answered."), text("fresh answer"))
    log = EventLog()
    result = await ReActAgent(llm, registry_of(), context_guard=guard).run(
        "new question", history=long_history(5, 2000), on_event=log
    )
    assert result.answer == "fresh answer"
    (compact,) = log.of("compact")
    assert list(compact) == ["original_messages", "kept_messages"]
    assert compact["original_messages"] == 12
    assert compact["kept_messages"] < 12
    assert log.labels()[:3] == ["compact", "step:thinking:start", "step:thinking:done"]
    sent = scripted_llm.requests[1]["messages"]
    assert any("Earlier: questions 0-2 were answered." in m["content"] for m in sent)
    assert result.usage.calls == 2  # the summarising call is counted


async def test_context_length_error_compacts_to_half_the_budget_and_retries_once(scripted_llm, make_llm):
    llm = make_llm()
    guard = ContextGuard(llm, context_window=12000, summary_reserve=500, safety_margin=100)
    history = long_history(5, 3200)  # ~8,000 tokens: under the budget, over half of it
    scripted_llm.script(context_length_error(), text("summary of earlier turns"), text("answer after retry"))
    log = EventLog()
    result = await ReActAgent(llm, registry_of(), context_guard=guard).run("q", history=history, on_event=log)
    assert result.answer == "answer after retry"
    assert len(scripted_llm.requests) == 3
    assert len(scripted_llm.requests[2]["messages"]) < len(scripted_llm.requests[0]["messages"])
    assert len(log.of("compact")) == 1


async def test_a_second_context_length_error_ends_the_run_with_llm_error(scripted_llm, make_llm):
    llm = make_llm()
    guard = ContextGuard(llm, context_window=12000, summary_reserve=500, safety_margin=100)
    scripted_llm.script(context_length_error(), text("summary"), context_length_error())
    result = await ReActAgent(llm, registry_of(), context_guard=guard).run("q", history=long_history(5, 3200))
    assert result.stop_reason == "llm_error"
    assert len(scripted_llm.requests) == 3


async def test_without_a_guard_a_context_length_error_ends_the_run_with_llm_error(scripted_llm, make_llm):
    scripted_llm.script(context_length_error())
    result = await ReActAgent(make_llm(), registry_of()).run("q")
    assert result.stop_reason == "llm_error"


# --- logging ------------------------------------------------------------------------------------


async def test_one_log_line_per_turn_with_compaction_llm_and_tool_time(scripted_llm, make_llm, caplog):
    scripted_llm.script(tool_calls(call("search", {"q": "secret payload"})), text("the secret answer"))
    with caplog.at_level(logging.INFO, logger="agents.engine.react"):
        await ReActAgent(make_llm(), registry_of(RecordingTool())).run("my private question")
    turns = [r for r in caplog.records if r.getMessage().startswith("turn ")]
    assert [r.getMessage().split(":")[0] for r in turns] == ["turn 1", "turn 2"]
    assert all(k in turns[0].getMessage() for k in ("compaction", "llm", "tools"))
    assert "secret" not in caplog.text and "private" not in caplog.text  # no prompts or payloads in logs


async def test_cancel_before_the_run_starts_stops_it_at_once(scripted_llm, make_llm):
    agent = ReActAgent(make_llm(), registry_of())
    agent.cancel()
    log = EventLog()
    result = await agent.run("go", on_event=log)
    assert result.cancelled and result.iterations == 0
    assert scripted_llm.requests == []
    assert log.channels() == ["done"]
    scripted_llm.script(text("next"))
    assert (await agent.run("again")).answer == "next"  # the request was used up


@pytest.mark.parametrize(
    ("question", "language", "expected", "not_expected"),
    [
        ("look up the invoice", "zh-hans", "已达到 1 次迭代上限", "limit of 1 iterations"),
        ("查一下发票", "en", "limit of 1 iterations", "已达到 1 次迭代上限"),
    ],
    ids=["chinese-interface-english-question", "english-interface-chinese-question"],
)
async def test_fallback_summary_follows_the_users_interface_language_over_the_question(
    scripted_llm, make_llm, question, language, expected, not_expected
):
    scripted_llm.script(tool_calls(call("search", {"q": "a"})))
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), max_iterations=1)
    result = await agent.run(question, language=language)
    assert expected in result.answer
    assert not_expected not in result.answer
    assert result.language == language


async def test_an_endpoint_failure_is_named_in_the_interface_language_given_to_the_run(
    scripted_llm, make_llm
):
    scripted_llm.script(error(503, message="overloaded"))
    result = await ReActAgent(make_llm(), registry_of()).run("check the orders", language="zh-hans")
    assert result.stop_reason == "llm_error"
    assert "服务器错误（HTTP 503）" in result.answer
