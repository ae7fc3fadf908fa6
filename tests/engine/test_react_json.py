"""JSON mode: the prompt protocol, action parsing and the parse-failure fallback."""

from __future__ import annotations

import json

import pytest

from agents.engine.parsing import FINAL_ANSWER, TOOL_CALL, decode_arguments, parse_action
from agents.engine.prompts import PARSE_FAILURE_SENTINEL
from agents.engine.react import ReActAgent
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import text


def act(name: str, args: dict, reasoning: str = "look it up") -> str:
    return json.dumps(
        {"reasoning": reasoning, "action": {"type": "tool_call", "tool_name": name, "tool_args": args}}
    )


def final(answer: str, reasoning: str = "done") -> str:
    return json.dumps({"reasoning": reasoning, "action": {"type": "final_answer", "answer": answer}})


@pytest.fixture
def json_llm(make_llm):
    return make_llm(tool_call=False)


async def test_json_mode_embeds_tool_descriptions_and_schemas_in_the_system_prompt(scripted_llm, json_llm):
    scripted_llm.script(text(final("hi")))
    await ReActAgent(json_llm, registry_of(RecordingTool("search"))).run("hi")
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert "### search\nSearch the knowledge base." in system
    assert '"required": ["q"]' in system
    assert '"type": "final_answer"' in system


async def test_json_mode_without_json_mode_ability_sends_no_response_format(scripted_llm, make_llm):
    scripted_llm.script(text(final("hi")))
    await ReActAgent(make_llm(tool_call=False, json_mode=False), registry_of()).run("hi")
    assert "response_format" not in scripted_llm.requests[0]


async def test_json_mode_runs_a_tool_and_appends_the_observation_as_a_user_message(scripted_llm, json_llm):
    tool = RecordingTool("search")
    scripted_llm.script(text(act("search", {"q": "x"})), text(final("x is 42")))
    log = EventLog()
    result = await ReActAgent(json_llm, registry_of(tool)).run("what is x?", on_event=log)
    assert tool.calls == [{"q": "x"}]
    sent = scripted_llm.requests[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": act("search", {"q": "x"})}
    assert sent[-1] == {"role": "user", "content": 'Observation from `search`:\nsearch: {"q": "x"}'}
    assert (result.answer, result.stop_reason, result.iterations) == ("x is 42", "final_answer", 2)
    assert log.steps("thinking", "done")[0]["reasoning"] == "look it up"
    assert log.steps("iteration", "start")[0]["tool_call_id"] == "json_call_1"


async def test_json_parse_failure_appends_the_raw_reply_and_a_reformat_request_then_recovers(
    scripted_llm, json_llm
):
    scripted_llm.script(text("Sure! The answer is 42."), text(final("42")))
    result = await ReActAgent(json_llm, registry_of()).run("q")
    sent = scripted_llm.requests[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": "Sure! The answer is 42."}
    assert sent[-1]["role"] == "user"
    assert sent[-1]["content"].startswith("Your previous response could not be parsed as valid JSON.")
    assert (result.answer, result.stop_reason) == ("42", "final_answer")


async def test_second_consecutive_parse_failure_makes_the_raw_content_the_answer(scripted_llm, json_llm):
    scripted_llm.script(text("not json"), text("The answer is 42, honestly."))
    result = await ReActAgent(json_llm, registry_of()).run("q")
    assert result.answer == "The answer is 42, honestly."
    assert result.stop_reason == "unparsed_output"
    assert result.iterations == 2


async def test_two_empty_replies_in_json_mode_end_with_a_summary_not_an_empty_answer(scripted_llm, json_llm):
    scripted_llm.script(text(""), text("  "))
    result = await ReActAgent(json_llm, registry_of()).run("q")
    assert result.stop_reason == "unparsed_output"
    assert result.answer.strip()


async def test_parse_retries_count_toward_max_iterations(scripted_llm, json_llm):
    scripted_llm.script(text("garbage"), text(final("never read")))
    result = await ReActAgent(json_llm, registry_of(), max_iterations=1).run("q")
    assert len(scripted_llm.requests) == 1
    assert (result.stop_reason, result.iterations) == ("max_iterations", 1)


async def test_a_parse_failure_between_good_replies_does_not_end_the_run(scripted_llm, json_llm):
    scripted_llm.script(
        text("oops"), text(act("search", {"q": "x"})), text("oops again"), text(final("fine"))
    )
    result = await ReActAgent(json_llm, registry_of(RecordingTool())).run("q")
    assert (result.answer, result.stop_reason) == ("fine", "final_answer")


async def test_reasoning_content_fills_an_empty_json_reasoning_field(scripted_llm, json_llm):
    scripted_llm.script(text(final("42", reasoning=""), reasoning_content="deep thoughts"))
    log = EventLog()
    await ReActAgent(json_llm, registry_of()).run("q", on_event=log)
    assert log.steps("thinking", "done")[0]["reasoning"] == "deep thoughts"


# --- parsing units ------------------------------------------------------------------------------


def test_parse_action_reads_tool_calls_and_final_answers():
    action = parse_action(act("search", {"q": "x"}))
    assert (action.kind, action.tool_name, action.tool_args, action.reasoning) == (
        TOOL_CALL,
        "search",
        {"q": "x"},
        "look it up",
    )
    assert parse_action(final("hi")).answer == "hi"


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + final("fenced") + "\n```",
        "Here you go: " + final("prose around"),
        '{"action": "final_answer", "answer": "flat"}',
        '{"final_answer": "shorthand"}',
    ],
)
def test_parse_action_tolerates_common_variations(content):
    assert parse_action(content).kind == FINAL_ANSWER
    assert not parse_action(content).parse_failed


@pytest.mark.parametrize(
    "content", ["plain text", "", '{"action": {"type": "tool_call"}}', '{"action": {"type": "dance"}}']
)
def test_unusable_output_parses_as_a_final_answer_with_the_sentinel_reasoning(content):
    action = parse_action(content)
    assert action.kind == FINAL_ANSWER
    assert action.reasoning == PARSE_FAILURE_SENTINEL == "(could not parse LLM output as JSON)"
    assert action.answer == content


def test_decode_arguments_accepts_objects_and_explains_everything_else():
    assert decode_arguments('{"a": 1}') == ({"a": 1}, None)
    assert decode_arguments("") == ({}, None)
    assert decode_arguments({"a": 1}) == ({"a": 1}, None)
    assert "not valid JSON" in decode_arguments("{oops")[1]
    assert "must be a JSON object" in decode_arguments("[1, 2]")[1]


@pytest.mark.parametrize("tool_call", [True, False], ids=["native", "json"])
async def test_system_prompt_says_a_human_rejection_is_to_be_reported_not_retried(
    scripted_llm, make_llm, tool_call
):
    scripted_llm.script(text(final("ok")))
    await ReActAgent(make_llm(tool_call=tool_call), registry_of(), system_prompt="Be brief.").run("q")
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert system.startswith("Be brief.")
    assert "A call rejected by a human is a decision: report it to the user, do not retry it" in system
    assert "do not try to reach the same effect through another tool" in system
