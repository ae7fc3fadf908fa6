"""stream_answer: the synthesiser prompt, the trace it reads, streaming, and its fallback."""

from __future__ import annotations

import json

import pytest

from agents.engine.metering import MeteredLLM
from agents.engine.react import ReActAgent
from agents.engine.stop_reasons import StopReason
from agents.engine.synthesis import format_trace
from tests.engine.doubles import EventLog, FakeLLM, RecordingTool, SynthesisBudget, registry_of, say, use
from tests.fakes.openai_server import call, error, text, tool_calls


async def test_stream_answer_streams_answer_deltas_and_returns_the_whole_answer(scripted_llm, make_llm):
    scripted_llm.script(text("draft"), text("The final answer.", chunk_size=5))
    agent = ReActAgent(make_llm(), registry_of())
    result = await agent.run("q")
    log = EventLog()
    answer = await agent.stream_answer(result, on_event=log)
    assert answer == "The final answer."
    deltas = [e["content"] for e in log.of("answer") if e["status"] == "delta"]
    assert deltas == ["The f", "inal ", "answe", "r."]
    assert log.of("answer")[-1] == {"status": "done", "content": "The final answer.", "fallback": False}
    assert scripted_llm.requests[1]["stream"] is True


async def test_synthesiser_prompt_asks_for_a_direct_markdown_answer_in_the_questions_language(
    scripted_llm, make_llm
):
    scripted_llm.script(text("draft"), text("answer"))
    agent = ReActAgent(make_llm(), registry_of())
    await agent.stream_answer(await agent.run("发票有多少张？"))
    system, user = scripted_llm.requests[1]["messages"]
    assert system["role"] == "system"
    for phrase in ("directly", "markdown", "meta-commentary", "same language as the user's question"):
        assert phrase in system["content"]
    assert user["content"].startswith("Question:\n发票有多少张？")
    assert "Draft answer from the agent" in user["content"] and "draft" in user["content"]


async def test_the_trace_cuts_tool_results_to_2000_characters(scripted_llm, make_llm):
    tool = RecordingTool("dump", result="x" * 5000)
    scripted_llm.script(tool_calls(call("dump", {"q": "all"})), text("draft"), text("answer"))
    agent = ReActAgent(make_llm(), registry_of(tool))
    await agent.stream_answer(await agent.run("dump it"))
    user = scripted_llm.requests[2]["messages"][1]["content"]
    assert "[tool call] dump(" in user
    assert "[tool result: dump]\n" + "x" * 2000 + "… [cut: 3000 more characters]" in user
    assert "x" * 2001 not in user


async def test_the_trace_includes_json_mode_observations_and_compaction_summaries():
    messages = [
        {"role": "system", "content": "loop instructions"},
        {"role": "user", "content": "[Conversation summary]\nwe found 3 invoices", "_summary": True},
        {"role": "user", "content": "how many?", "_query": True},
        {"role": "assistant", "content": '{"action": {"type": "tool_call", "tool_name": "count"}}'},
        {"role": "user", "content": "Observation from `count`:\n" + "7" * 3000, "_bookkeeping": True},
    ]
    trace = format_trace(messages, "how many?")
    assert "loop instructions" not in trace
    assert "how many?" not in trace  # the question is given separately
    assert "[summary of earlier work]\n[Conversation summary]\nwe found 3 invoices" in trace
    assert "Observation from `count`:\n" + "7" * 1970 in trace
    assert "7" * 2001 not in trace


async def test_a_stream_dying_mid_answer_falls_back_to_the_loops_answer_coherently(scripted_llm, make_llm):
    scripted_llm.script(text("the loop's answer"), text("one two three four five six", die_after_chunks=1))
    agent = ReActAgent(make_llm(), registry_of())
    result = await agent.run("q")
    log = EventLog()
    answer = await agent.stream_answer(result, on_event=log)
    assert answer == "the loop's answer"
    statuses = [e["status"] for e in log.of("answer")]
    assert statuses[0] == "start" and statuses[-1] == "done"
    assert log.of("answer")[-1] == {"status": "done", "content": "the loop's answer", "fallback": True}
    assert log.of("done")[0]["answer"] == "the loop's answer"


async def test_a_stream_failing_before_any_delta_sends_the_loops_answer_as_the_only_delta(
    scripted_llm, make_llm
):
    scripted_llm.script(text("the loop's answer"), error(500))
    agent = ReActAgent(make_llm(), registry_of())
    log = EventLog()
    answer = await agent.stream_answer(await agent.run("q"), on_event=log)
    assert answer == "the loop's answer"
    assert log.of("answer") == [
        {"status": "start"},
        {"status": "delta", "content": "the loop's answer"},
        {"status": "done", "content": "the loop's answer", "fallback": True},
    ]


async def test_an_empty_stream_falls_back_to_the_loops_answer(scripted_llm, make_llm):
    scripted_llm.script(text("the loop's answer"), text(""))
    agent = ReActAgent(make_llm(), registry_of())
    assert await agent.stream_answer(await agent.run("q")) == "the loop's answer"


async def test_after_an_llm_error_the_answer_is_not_requested_again(scripted_llm, make_llm):
    scripted_llm.script(error(500))
    agent = ReActAgent(make_llm(), registry_of())
    result = await agent.run("q")
    log = EventLog()
    answer = await agent.stream_answer(result, on_event=log)
    assert len(scripted_llm.requests) == 1
    assert answer == result.answer and "because of the language model" in answer
    assert log.labels() == ["answer:start", "answer:delta", "answer:done", "done"]
    assert log.of("done")[0]["stop_reason"] == "llm_error"


async def test_done_reports_usage_including_the_synthesis_and_the_total_elapsed_time():
    llm = FakeLLM(use(("search", {"q": "x"})), say("draft"), streams=["streamed answer"])
    agent = ReActAgent(llm, registry_of(RecordingTool()))
    result = await agent.run("q")
    log = EventLog()
    await agent.stream_answer(result, on_event=log)
    (done,) = log.of("done")
    assert done["usage"]["calls"] == result.usage.calls + 1
    assert done["elapsed"] >= result.elapsed
    assert done["iterations"] == 2
    # the synthesiser read the tool call and its result
    trace = llm.stream_calls[0][1]["content"]
    assert '[tool call] search({"q": "x"})' in trace
    assert json.dumps({"q": "x"}, sort_keys=True) in trace


async def test_tool_loop_calls_are_not_streamed_and_only_the_synthesis_is(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("search", {"q": "x"})), text("draft"), text("answer"))
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()))
    await agent.stream_answer(await agent.run("q"))
    assert [bool(r.get("stream")) for r in scripted_llm.requests] == [False, False, True]


async def test_cancel_during_synthesis_stops_the_stream_and_reports_a_cancelled_done():
    import asyncio

    release = asyncio.Event()

    llm = FakeLLM(say("draft"), streams=[["Part one. "]])
    original = llm.stream_chat

    async def slow_stream(messages, **kwargs):
        async for piece in original(messages, **kwargs):
            yield piece
        await release.wait()  # the provider stalls after the first piece
        yield "never sent"

    llm.stream_chat = slow_stream
    agent = ReActAgent(llm, registry_of())
    result = await agent.run("q")
    log = EventLog()
    first_delta = asyncio.Event()

    async def on_event(event):
        await log(event)
        if event.data.get("status") == "delta":
            first_delta.set()

    task = asyncio.create_task(agent.stream_answer(result, on_event=on_event))
    await first_delta.wait()
    agent.cancel()
    answer = await task
    assert answer == "Part one. "
    assert log.of("answer")[-1] == {"status": "done", "content": "Part one. ", "fallback": False}
    assert log.of("done")[0]["cancelled"] is True
    assert log.of("done")[0]["stop_reason"] == "cancelled"


@pytest.mark.parametrize(
    ("question", "head"),
    [
        (
            "Where is order 7?",
            "I stopped before the task was finished: "
            "the monthly token budget “Acme” of the organization (2000 tokens) is used up.",
        ),
        ("订单 7 在哪里？", "任务尚未完成就已停止：组织的每月Token预算「Acme」（2000 tokens）已用完。"),
    ],
)
async def test_a_budget_refusing_the_synthesis_ends_the_answer_with_budget_exceeded(
    scripted_llm, make_llm, question, head
):
    # given a loop that answers at once, and a budget that refuses the next call (the synthesis)
    scripted_llm.script(text("Order 7 has shipped."), text("never asked"))
    agent = ReActAgent(MeteredLLM(make_llm(), SynthesisBudget()), registry_of())
    result = await agent.run(question)
    assert result.stop_reason == "final_answer"

    # when the answer is synthesised
    log = EventLog()
    answered = await agent.answer(result, on_event=log)

    # then the synthesis was not sent, and the answer says why the run stopped first, as the tool loop's
    assert len(scripted_llm.requests) == 1
    expected = f"{head}\n\nOrder 7 has shipped."
    assert (answered.text, answered.stop_reason, answered.fallback) == (
        expected,
        StopReason.BUDGET_EXCEEDED,
        True,
    )
    assert log.of("answer") == [
        {"status": "start"},
        {"status": "delta", "content": expected},
        {"status": "done", "content": expected, "fallback": True},
    ]
    (done,) = log.of("done")
    assert (done["stop_reason"], done["cancelled"], done["answer"]) == ("budget_exceeded", False, expected)
