"""Thinking models: the reasoning of a tool-calling turn goes back to providers that require it.

DeepSeek's thinking mode (https://api-docs.deepseek.com/guides/thinking_mode) refuses, with a 400, any
request whose assistant message with ``tool_calls`` lacks the ``reasoning_content`` it came with. The
scripted server plays that profile; runs go through the real ``openai`` SDK.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import openai
import pytest

from agents.engine.completion import REASONING_FIELDS, ChatResponse, ToolCallRequest
from agents.engine.durable.checkpoint import Checkpoint, checkpoints_fold
from agents.engine.llm import OpenAICompatibleLLM, Usage
from agents.engine.plan.agent import PlanAgent
from agents.engine.react import ReActAgent
from agents.engine.reasoning import reasoning_replay_default
from tests.engine import test_plan_support as support
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.engine.test_plan_support import plan_reply, step, verdict
from tests.fakes.openai_server import (
    DEEPSEEK_REASONING_NOT_PASSED_BACK,
    DEEPSEEK_THINKING,
    call,
    text,
    tool_calls,
)

registry = support.registry  # fixtures
script = support.script

THOUGHT = DEEPSEEK_THINKING.reasoning


def tool_turns(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "assistant" and m.get("tool_calls")]


# --- the profile itself -------------------------------------------------------------------------


async def test_the_deepseek_profile_refuses_a_tool_turn_without_its_reasoning_as_documented(scripted_llm):
    scripted_llm.profile = DEEPSEEK_THINKING
    client = openai.AsyncOpenAI(base_url=scripted_llm.base_url, api_key="sk-test", max_retries=0)
    messages = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
    ]
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="deepseek-chat", messages=messages)
    await client.close()
    assert refused.value.status_code == 400
    assert refused.value.body == {
        "message": DEEPSEEK_REASONING_NOT_PASSED_BACK,
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
    assert scripted_llm.quirks["reasoning_back_refused"] == 1


# --- a ReAct run ---------------------------------------------------------------------------------


async def test_a_multi_tool_run_finishes_against_deepseek_thinking_mode(scripted_llm, make_llm):
    scripted_llm.profile = DEEPSEEK_THINKING
    scripted_llm.script(
        tool_calls(call("orders", {"q": "acme"}, id="c1"), call("invoices", {"q": "acme"}, id="c2")),
        tool_calls(call("orders", {"q": "acme 2024"}, id="c3"), reasoning_content="One more look."),
        text("3 orders, 3 invoices"),
        text("ACME has 3 orders and 3 invoices."),
    )
    tools = registry_of(RecordingTool("orders"), RecordingTool("invoices"))
    agent = ReActAgent(make_llm(), tools, completion_check=False)
    log = EventLog()

    result = await agent.run("ACME's orders and invoices?", on_event=log)
    answer = await agent.stream_answer(result, on_event=log)

    assert (result.stop_reason, result.iterations, len(result.tool_calls)) == ("final_answer", 3, 3)
    assert answer == "ACME has 3 orders and 3 invoices."
    second, third = scripted_llm.requests[1], scripted_llm.requests[2]
    assert [m["reasoning_content"] for m in tool_turns(second)] == [THOUGHT]
    assert [m["reasoning_content"] for m in tool_turns(third)] == [THOUGHT, "One more look."]
    assert scripted_llm.quirks["reasoning_back_refused"] == 0
    assert scripted_llm.quirks["reasoning_back_accepted"] == 2
    assert log.of("done")[0]["stop_reason"] == "final_answer"


async def test_the_reasoning_is_shown_as_thinking_and_never_as_the_answer(scripted_llm, make_llm):
    scripted_llm.profile = DEEPSEEK_THINKING
    scripted_llm.script(
        tool_calls(call("orders", {"q": "acme"}, id="c1")),
        text("3 orders"),
        text("ACME has 3 orders.", reasoning_content="I should write it briefly."),
    )
    agent = ReActAgent(make_llm(), registry_of(RecordingTool("orders")))
    log = EventLog()

    result = await agent.run("ACME's orders?", on_event=log)
    answer = await agent.stream_answer(result, on_event=log)

    assert answer == "ACME has 3 orders."
    deltas = "".join(e["content"] for e in log.of("answer") if e["status"] == "delta")
    assert deltas == answer
    assert log.of("answer")[-1]["content"] == answer and log.of("done")[0]["answer"] == answer
    assert log.steps("thinking", "done")[0]["reasoning"] == THOUGHT
    assert scripted_llm.quirks["reasoning_sent"] >= 2


async def test_a_streamed_answer_counts_its_reasoning_in_the_usage_estimate(scripted_llm, make_llm):
    scripted_llm.script(text("ok", reasoning_content="word " * 400, omit_usage=True))
    usage = Usage()

    parts = [d async for d in make_llm().stream_chat([{"role": "user", "content": "hi"}], usage=usage)]

    assert "".join(parts) == "ok"
    assert usage.completion_tokens >= 400  # the 2,000 characters of reasoning were generated and billed


# --- plan mode -----------------------------------------------------------------------------------


async def test_a_plan_mode_run_finishes_against_deepseek_thinking_mode(registry, script, scripted_llm):
    scripted_llm.profile = DEEPSEEK_THINKING
    script.planner(plan_reply(step("1", "find orders", tool_hint="orders"), step("2", "compare", ["1"])))
    script.step(
        "1",
        tool_calls(call("orders", {"q": "acme"})),
        tool_calls(call("orders", {"q": "acme 2024"})),
        text("3 orders"),
    )
    script.step("2", tool_calls(call("invoices", {"q": "acme"})), text("they match"))
    script.analyzer(verdict(True, 0.9, "complete", "The 3 orders match the invoices."))
    script.synthesis(text("ACME's 3 orders match its invoices."))
    agent = PlanAgent(
        registry,
        registry_of(RecordingTool("orders"), RecordingTool("invoices")),
        today=lambda: date(2025, 3, 14),
    )
    log = EventLog()

    result = await agent.run("Compare ACME's orders with its invoices", on_event=log)
    answer = await agent.stream_synthesize(result, on_event=log)

    assert result.stop_reason == "achieved"
    assert answer == "ACME's 3 orders match its invoices."
    assert scripted_llm.quirks["reasoning_back_refused"] == 0
    assert scripted_llm.quirks["reasoning_back_accepted"] >= 3


# --- checkpoints ---------------------------------------------------------------------------------


async def test_checkpoint_and_restore_keep_the_reasoning_of_a_tool_turn(scripted_llm, make_llm):
    checkpoints: list[dict[str, Any]] = []

    async def keep(checkpoint: Checkpoint) -> None:
        checkpoints.append(json.loads(json.dumps(checkpoint.as_dict())))  # as the database keeps it

    scripted_llm.script(
        tool_calls(call("orders", {"q": "acme"}, id="c1"), reasoning_content="Orders first."),
        text("3 orders"),
    )
    await ReActAgent(make_llm(), registry_of(RecordingTool("orders"))).run("q", checkpoint=keep)
    after_tools = next(
        i
        for i, c in enumerate(checkpoints)
        if c["state"]["stage"] == "model" and c["state"]["iteration"] == 1
    )
    checkpoint = checkpoints_fold(checkpoints[: after_tools + 1])
    assert checkpoint is not None
    (turn,) = [m for m in checkpoint["messages"] if m.get("tool_calls")]
    assert turn["reasoning_content"] == "Orders first."

    scripted_llm.reset()
    scripted_llm.profile = DEEPSEEK_THINKING
    scripted_llm.script(text("3 orders"), text("ACME has 3 orders."))
    resumed = ReActAgent(make_llm(), registry_of(RecordingTool("orders")))
    result = await resumed.run("q", resume_from=checkpoint)

    assert result.stop_reason == "final_answer"
    assert [m["reasoning_content"] for m in tool_turns(scripted_llm.requests[0])] == ["Orders first."]


# --- the assistant message and what is sent ------------------------------------------------------


def test_the_assistant_message_of_a_tool_turn_keeps_every_reasoning_field_as_received():
    response = ChatResponse(
        content=None,
        tool_calls=(ToolCallRequest("c1", "f", "{}"),),
        reasoning_content="thought",
        reasoning_fields={
            "reasoning": "thought",
            "reasoning_details": [{"type": "reasoning.text", "text": "t"}],
        },
    )
    message = response.assistant_message()
    assert message["reasoning"] == "thought"
    assert message["reasoning_details"] == [{"type": "reasoning.text", "text": "t"}]
    assert set(REASONING_FIELDS) >= {"reasoning_content", "reasoning", "reasoning_details"}


def test_a_final_answer_message_carries_no_reasoning():
    assert (
        "reasoning_content" not in ChatResponse(content="hi", reasoning_content="thought").assistant_message()
    )


@pytest.mark.parametrize(
    ("base_url", "replay"),
    [
        ("https://api.deepseek.com", True),
        ("https://api.deepseek.com/v1", True),
        ("https://api.moonshot.cn/v1", True),
        ("https://dashscope.aliyuncs.com/compatible-mode/v1", True),
        ("https://open.bigmodel.cn/api/paas/v4/", True),
        ("http://vllm.internal:8000/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://acme.openai.azure.com/openai/deployments/gpt-4o", False),
    ],
)
def test_reasoning_goes_back_by_default_except_to_providers_that_refuse_unknown_fields(base_url, replay):
    assert reasoning_replay_default(base_url) is replay


async def test_an_endpoint_without_replay_receives_no_reasoning_field(scripted_llm):
    scripted_llm.script(text("ok"))
    llm = OpenAICompatibleLLM(
        base_url=scripted_llm.base_url,
        api_key="sk-test",
        model="m",
        abilities={"reasoning_replay": False},
        max_retries=0,
    )
    turn = ChatResponse(
        content="", tool_calls=(ToolCallRequest("c1", "f", "{}"),), reasoning_content="thought"
    ).assistant_message()
    history = [{"role": "user", "content": "q"}, turn, {"role": "tool", "tool_call_id": "c1", "content": "r"}]

    await llm.chat(history)

    (sent,) = tool_turns(scripted_llm.last_request)
    assert not set(sent) & set(REASONING_FIELDS)
    assert turn["reasoning_content"] == "thought"  # the history keeps it
