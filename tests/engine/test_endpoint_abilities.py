"""The engine respects each endpoint ability and degrades once when the endpoint refuses a feature.

Every refusal is answered by the scripted server as the provider answers it (HTTP 400 and the provider's
documented message, see ``agents/engine/abilities.py`` for the sources), looking at the request body.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from agents.engine.abilities import FORCED_TOOL_CHOICE, JSON_MODE, PARALLEL_TOOL_CALLS, refused
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.planner import Planner
from agents.engine.prompts import JSON_WORD_NOTE, with_json_word
from agents.engine.react import ReActAgent
from agents.engine.structured import StructuredOutputError, structured_llm_call
from tests.engine.doubles import RecordingTool, registry_of
from tests.fakes.openai_replies import ErrorReply, Reply
from tests.fakes.openai_server import call, error, text, tool_calls

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

DEEPSEEK_TOOL_CHOICE = "Thinking mode does not support this tool_choice"
ARK_JSON_OBJECT = (
    "The parameter `response_format.type` specified in the request are not valid: `json_object` is not "
    "supported by this model."
)
DASHSCOPE_JSON_THINKING = "Json mode response is not supported when enable_thinking is true"
AZURE_PARALLEL = "Unrecognized request argument supplied: parallel_tool_calls"
OPENAI_JSON_WORD = (
    "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'."
)
VLLM_NO_PARSER = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


def refusing(field: str, message: str, then: Reply | None = None) -> Callable:
    """One reply: the provider's 400 when the request carries ``field`` (for tool_choice: a value that forces
    a call), else ``then`` (none: the request was expected to carry the field)."""

    def reply(body: dict[str, Any]) -> Reply:
        value = body.get(field)
        if value is not None and not (field == "tool_choice" and value in ("auto", "none")):
            return ErrorReply(400, message, "invalid_request_error")
        if then is None:
            return ErrorReply(500, f"the request was expected to carry {field}", "test_error")
        return then

    return reply


def json_word_rule(then: Reply) -> Callable:
    """OpenAI's rule: json_object without the word "json" in the messages is a 400."""

    def reply(body: dict[str, Any]) -> Reply:
        if (body.get("response_format") or {}).get("type") == "json_object":
            said = " ".join(str(m.get("content") or "") for m in body["messages"]).lower()
            if "json" not in said:
                return ErrorReply(400, OPENAI_JSON_WORD, "invalid_request_error")
        return then

    return reply


# --- forced tool choice ----------------------------------------------------------------------


async def test_without_forced_tool_choice_the_ladder_uses_json_mode_and_never_forces(scripted_llm, endpoint):
    scripted_llm.script(text('{"n": 1}'))
    result = await structured_llm_call(
        endpoint(forced_tool_choice=False), [{"role": "user", "content": "n?"}], schema=SCHEMA
    )
    assert (result.level, result.value, result.attempts) == ("json_mode", {"n": 1}, 1)
    assert all("tool_choice" not in r for r in scripted_llm.requests)


async def test_without_forced_tool_choice_nor_json_mode_the_function_is_offered_with_auto(
    scripted_llm, endpoint
):
    scripted_llm.script(tool_calls(call("structured_output", {"n": 2})))
    llm = endpoint(forced_tool_choice=False, json_mode=False)
    result = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert (result.level, result.value) == ("native", {"n": 2})
    request = scripted_llm.requests[0]
    assert "tool_choice" not in request and request["tools"][0]["function"]["name"] == "structured_output"
    assert "calling the function `structured_output`" in request["messages"][0]["content"]


async def test_a_refused_tool_choice_degrades_once_to_json_mode_for_the_llm(scripted_llm, endpoint, caplog):
    scripted_llm.script(
        refusing("tool_choice", DEEPSEEK_TOOL_CHOICE),
        refusing("tool_choice", DEEPSEEK_TOOL_CHOICE, text('{"n": 3}')),
        refusing("tool_choice", DEEPSEEK_TOOL_CHOICE, text('{"n": 4}')),
    )
    llm = endpoint()
    with caplog.at_level(logging.WARNING, logger="agents.engine.abilities"):
        first = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert (first.level, first.value, first.degraded) == ("json_mode", {"n": 3}, (FORCED_TOOL_CHOICE,))
    assert first.attempts == 2
    assert "scripted-model at 127.0.0.1 refused forced_tool_choice" in caplog.text
    assert "supports forced tool choice" in caplog.text

    second = await structured_llm_call(llm, [{"role": "user", "content": "again"}], schema=SCHEMA)
    assert (second.level, second.value) == ("json_mode", {"n": 4})
    assert "tool_choice" not in scripted_llm.requests[2]  # the refusal is remembered: asked once only
    assert refused(llm) == {FORCED_TOOL_CHOICE}


async def test_a_refused_tool_choice_without_json_mode_goes_on_to_plain_text(scripted_llm, endpoint):
    scripted_llm.script(
        refusing("tool_choice", DEEPSEEK_TOOL_CHOICE),
        refusing("tool_choice", DEEPSEEK_TOOL_CHOICE, text('Here: {"n": 5}')),
    )
    result = await structured_llm_call(
        endpoint(json_mode=False), [{"role": "user", "content": "n?"}], schema=SCHEMA
    )
    assert (result.level, result.value, result.attempts) == ("plain_text", {"n": 5}, 2)


async def test_other_errors_of_the_forced_level_do_not_count_as_a_refusal(scripted_llm, endpoint):
    scripted_llm.script(
        error(400, message="Invalid schema for function 'structured_output'"), text('{"n": 6}')
    )
    llm = endpoint()
    result = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert result.level == "json_mode" and result.degraded == ()
    assert refused(llm) == frozenset()


async def test_plan_mode_plans_on_an_endpoint_that_refuses_forced_tool_choice(scripted_llm, endpoint):
    plan = '{"steps": [{"id": "1", "task": "Look up the order", "dependencies": []}]}'
    scripted_llm.script(
        refusing("tool_choice", DEEPSEEK_TOOL_CHOICE),
        *[refusing("tool_choice", DEEPSEEK_TOOL_CHOICE, text(plan))] * 2,
    )
    llm = endpoint()
    planner = Planner(ModelRegistry.single(llm))
    tools = registry_of(RecordingTool("search"))
    first = await planner.plan("Look up order 7", tools=tools)
    second = await planner.plan("Look up order 8", tools=tools)
    assert [s.task for s in first.steps] == [s.task for s in second.steps] == ["Look up the order"]
    assert [("tool_choice" in r, "response_format" in r) for r in scripted_llm.requests] == [
        (True, False),
        (False, True),
        (False, True),
    ]


# --- JSON mode -------------------------------------------------------------------------------


async def test_a_refused_json_mode_degrades_to_plain_text_for_the_llm(scripted_llm, endpoint):
    scripted_llm.script(
        refusing("response_format", ARK_JSON_OBJECT),
        refusing("response_format", ARK_JSON_OBJECT, text('{"n": 7}')),
        refusing("response_format", ARK_JSON_OBJECT, text('{"n": 8}')),
    )
    llm = endpoint(tool_call=False)
    first = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    second = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert (first.level, first.value, first.degraded, first.attempts) == (
        "plain_text",
        {"n": 7},
        (JSON_MODE,),
        2,
    )
    assert (second.level, second.value) == ("plain_text", {"n": 8})
    assert ["response_format" in r for r in scripted_llm.requests] == [True, False, False]


def test_a_json_mode_request_without_the_word_json_gets_it_in_the_system_prompt():
    messages = [{"role": "system", "content": "You sort orders."}, {"role": "user", "content": "Sort them."}]
    sent = with_json_word(messages)
    assert sent[0]["content"].endswith(JSON_WORD_NOTE) and sent[1:] == messages[1:]
    assert with_json_word([{"role": "user", "content": "n?"}])[0] == {
        "role": "system",
        "content": JSON_WORD_NOTE,
    }
    assert with_json_word([{"role": "user", "content": "Answer in JSON"}]) == [
        {"role": "user", "content": "Answer in JSON"}
    ]


async def test_every_json_mode_request_of_the_engine_says_json(scripted_llm, endpoint):
    action = '{"reasoning": "done", "action": {"type": "final_answer", "answer": "ok"}}'
    scripted_llm.script(json_word_rule(text('{"n": 1}')), json_word_rule(text(action)))
    llm = endpoint(tool_call=False)
    result = await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    agent = ReActAgent(llm, registry_of(RecordingTool("search")), system_prompt="You help.")
    run = await agent.run("hi")
    assert result.level == "json_mode" and run.answer == "ok"
    assert [r["response_format"] for r in scripted_llm.requests] == [{"type": "json_object"}] * 2


async def test_json_mode_react_runs_on_plain_text_when_json_mode_is_off(scripted_llm, endpoint):
    scripted_llm.script(
        text(
            'Sure. {"reasoning": "look", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "po"}}}'
        ),
        text('{"reasoning": "done", "action": {"type": "final_answer", "answer": "found"}}'),
    )
    search = RecordingTool("search")
    result = await ReActAgent(endpoint(tool_call=False, json_mode=False), registry_of(search)).run("find po")
    assert result.answer == "found" and search.calls == [{"q": "po"}]
    assert all("response_format" not in r and "tools" not in r for r in scripted_llm.requests)


async def test_json_mode_react_goes_on_in_plain_text_after_the_endpoint_refuses_json_mode(
    scripted_llm, endpoint
):
    tool_step = '{"reasoning": "look", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "a"}}}'
    final = '{"reasoning": "done", "action": {"type": "final_answer", "answer": "done"}}'
    scripted_llm.script(
        refusing("response_format", DASHSCOPE_JSON_THINKING),
        refusing("response_format", DASHSCOPE_JSON_THINKING, text(tool_step)),
        refusing("response_format", DASHSCOPE_JSON_THINKING, text(final)),
    )
    search = RecordingTool("search")
    llm = endpoint(tool_call=False)
    result = await ReActAgent(llm, registry_of(search)).run("find a")
    assert result.answer == "done" and result.stop_reason == "final_answer"
    assert ["response_format" in r for r in scripted_llm.requests] == [True, False, False]
    assert refused(llm) == {JSON_MODE}


# --- parallel tool calls ---------------------------------------------------------------------


async def test_without_parallel_tool_calls_the_engine_asks_for_one_and_runs_several_in_order(
    scripted_llm, endpoint
):
    scripted_llm.script(
        tool_calls(call("search", {"q": "a"}), call("search", {"q": "b"})),
        text("both"),
    )
    search = RecordingTool("search", delay=0.02)
    result = await ReActAgent(endpoint(parallel_tool_calls=False), registry_of(search)).run("a and b")
    first = scripted_llm.requests[0]
    assert first["parallel_tool_calls"] is False
    assert "one tool per reply" in first["messages"][0]["content"]
    assert search.calls == [{"q": "a"}, {"q": "b"}] and search.max_running == 1
    assert [r.args for r in result.tool_calls] == [{"q": "a"}, {"q": "b"}]
    follow = scripted_llm.requests[1]["messages"]
    assert [m["role"] for m in follow[-3:]] == ["assistant", "tool", "tool"]


async def test_with_parallel_tool_calls_nothing_is_added_and_calls_run_together(scripted_llm, endpoint):
    scripted_llm.script(tool_calls(call("search", {"q": "a"}), call("search", {"q": "b"})), text("both"))
    search = RecordingTool("search", delay=0.05)
    await ReActAgent(endpoint(), registry_of(search)).run("a and b")
    assert all("parallel_tool_calls" not in r for r in scripted_llm.requests)
    assert "several independent tools at once" in scripted_llm.requests[0]["messages"][0]["content"]
    assert search.max_running == 2


async def test_an_endpoint_refusing_the_parallel_tool_calls_field_is_asked_again_without_it(
    scripted_llm, endpoint
):
    scripted_llm.script(
        refusing("parallel_tool_calls", AZURE_PARALLEL),
        refusing("parallel_tool_calls", AZURE_PARALLEL, tool_calls(call("search", {"q": "a"}))),
        refusing("parallel_tool_calls", AZURE_PARALLEL, text("done")),
    )
    llm = endpoint(parallel_tool_calls=False)
    result = await ReActAgent(llm, registry_of(RecordingTool("search"))).run("a")
    assert result.answer == "done" and len(result.tool_calls) == 1
    assert ["parallel_tool_calls" in r for r in scripted_llm.requests] == [True, False, False]
    assert refused(llm) == {PARALLEL_TOOL_CALLS}


# --- tool calls written as text (no tool parser) ---------------------------------------------


async def test_a_hermes_tool_call_in_the_content_runs_as_a_tool_call(scripted_llm, endpoint):
    scripted_llm.script(
        text('<tool_call>\n{"name": "search", "arguments": {"q": "po 7"}}\n</tool_call>'),
        text("PO 7 is open."),
    )
    search = RecordingTool("search")
    result = await ReActAgent(endpoint(), registry_of(search)).run("po 7?")
    assert search.calls == [{"q": "po 7"}] and result.answer == "PO 7 is open."
    assert [(r.name, r.outcome) for r in result.tool_calls] == [("search", "ok")]
    history = scripted_llm.requests[1]["messages"]
    assert history[-2]["tool_calls"][0]["function"] == {"name": "search", "arguments": '{"q": "po 7"}'}
    assert history[-1]["role"] == "tool" and history[-1]["tool_call_id"] == history[-2]["tool_calls"][0]["id"]


async def test_a_bare_json_tool_call_runs_and_a_json_answer_naming_no_tool_stays_the_answer(
    scripted_llm, endpoint
):
    scripted_llm.script(
        text('{"name": "search", "parameters": {"q": "x"}}'),
        text('{"name": "ACME", "arguments": {"total": 3}}'),
    )
    search = RecordingTool("search")
    result = await ReActAgent(endpoint(), registry_of(search)).run("x")
    assert search.calls == [{"q": "x"}]
    assert result.answer == '{"name": "ACME", "arguments": {"total": 3}}'


async def test_hermes_tool_calls_after_some_text_run_and_the_text_stays_the_turns_content(
    scripted_llm, endpoint
):
    scripted_llm.script(
        text(
            'I will look both up.\n<tool_call>{"name": "search", "arguments": {"q": "a"}}</tool_call>\n'
            '<tool_call>{"name": "search", "arguments": {"q": "b"}}</tool_call>'
        ),
        text("Both are open."),
    )
    search = RecordingTool("search")
    result = await ReActAgent(endpoint(), registry_of(search)).run("a and b?")
    assert search.calls == [{"q": "a"}, {"q": "b"}] and result.answer == "Both are open."
    turn = scripted_llm.requests[1]["messages"][-3]
    assert turn["content"] == "I will look both up." and len(turn["tool_calls"]) == 2


async def test_text_after_a_tool_call_tag_fails_as_a_broken_tool_call(scripted_llm, endpoint):
    scripted_llm.script(text('<tool_call>{"name": "search", "arguments": {"q": "a"}}</tool_call> and then?'))
    search = RecordingTool("search")
    result = await ReActAgent(endpoint(), registry_of(search)).run("a?")
    assert result.stop_reason == "llm_error" and search.calls == []
    assert "text follows the <tool_call> tags" in result.answer


async def test_a_broken_tool_call_in_the_content_fails_naming_the_endpoint_misconfiguration(
    scripted_llm, endpoint
):
    scripted_llm.script(text('<tool_call>\n{"name": "search", "arguments": {"q": NaN}}\n</tool_call>'))
    search = RecordingTool("search")
    result = await ReActAgent(endpoint(), registry_of(search)).run("x")
    assert result.stop_reason == "llm_error" and search.calls == []
    assert "scripted-model at 127.0.0.1 returns tool calls as text" in result.answer
    assert "--enable-auto-tool-choice --tool-call-parser" in result.answer
    assert "'supports function calling'" in result.answer


async def test_the_structured_native_level_reads_its_function_call_written_as_text(scripted_llm, endpoint):
    scripted_llm.script(text('<tool_call>{"name": "structured_output", "arguments": {"n": 9}}</tool_call>'))
    result = await structured_llm_call(endpoint(), [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert (result.level, result.value, result.attempts) == ("native", {"n": 9}, 1)


async def test_vllm_without_a_tool_parser_fails_naming_the_setting(scripted_llm, endpoint):
    scripted_llm.script(error(400, message=VLLM_NO_PARSER, type="BadRequestError"))
    result = await ReActAgent(endpoint(), registry_of(RecordingTool("search"))).run("x")
    assert result.stop_reason == "llm_error"
    assert "has no tool parser" in result.answer and "switch off 'supports function calling'" in result.answer


# --- rate limits and context length ----------------------------------------------------------


async def test_a_rate_limited_endpoint_ends_the_run_saying_so_and_naming_it(scripted_llm, endpoint):
    scripted_llm.script(
        error(429, message="Rate limit reached", code="rate_limit_exceeded", headers={"retry-after": "7"})
    )
    result = await ReActAgent(endpoint(), registry_of(RecordingTool("search"))).run("x")
    assert result.stop_reason == "llm_error"
    assert "scripted-model at 127.0.0.1 is rate limiting requests (HTTP 429)" in result.answer


async def test_a_context_overflow_the_guard_cannot_fix_ends_the_run_naming_the_endpoint(
    scripted_llm, endpoint
):
    from tests.fakes.openai_server import context_length_error

    scripted_llm.script(context_length_error())
    result = await ReActAgent(endpoint(), registry_of(RecordingTool("search"))).run("x")
    assert result.stop_reason == "llm_error"
    assert (
        "the conversation is longer than the context window of scripted-model at 127.0.0.1" in result.answer
    )


async def test_a_rate_limit_or_context_overflow_ends_the_structured_ladder_at_once(scripted_llm, endpoint):
    from tests.fakes.openai_server import context_length_error

    scripted_llm.script(
        error(429, message="Rate limit reached", code="rate_limit_exceeded"), context_length_error()
    )
    llm = endpoint()
    limited = await structured_llm_call(
        llm, [{"role": "user", "content": "n?"}], schema=SCHEMA, default_value={}
    )
    with pytest.raises(StructuredOutputError) as caught:
        await structured_llm_call(llm, [{"role": "user", "content": "n?"}], schema=SCHEMA)
    assert (limited.level, limited.attempts) == ("default", 1)
    assert caught.value.attempts == 1 and "the endpoint cannot answer" in str(caught.value)
    assert len(scripted_llm.requests) == 2


async def test_a_chinese_question_is_told_of_the_rate_limit_in_chinese(scripted_llm, endpoint):
    scripted_llm.script(error(429, message="Rate limit reached", headers={"retry-after-ms": "1"}))
    result = await ReActAgent(endpoint(), registry_of(RecordingTool("search"))).run("查一下订单")
    assert "scripted-model at 127.0.0.1 正在限制请求频率（HTTP 429）" in result.answer
