"""structured_llm_call(): the spec's three-level degradation chain, through the scripted server."""

from __future__ import annotations

import json
import re

import pytest

from agents.engine.llm import LLMError
from agents.engine.structured import (
    REFORMAT_PROMPT,
    StructuredOutputError,
    extract_json,
    structured_llm_call,
)
from tests.fakes.openai_server import call, error, text, tool_calls

SCHEMA = {
    "type": "object",
    "properties": {"tools": {"type": "array", "items": {"type": "string"}}},
    "required": ["tools"],
}
GOOD = {"tools": ["search"]}
ASK = [{"role": "user", "content": "Which tools?"}]
PROSE = text("I think the search tool would help.")  # no JSON anywhere


def native(arguments: dict | str = GOOD):
    return tool_calls(call("structured_output", arguments))


def json_text(value: dict = GOOD):
    return text(json.dumps(value))


def kinds(requests: list[dict]) -> list[str]:
    """What each request asked for: native (forced tool), json_mode or plain_text."""
    out = []
    for body in requests:
        if "tools" in body:
            out.append("native")
        elif body.get("response_format") == {"type": "json_object"}:
            out.append("json_mode")
        else:
            out.append("plain_text")
    return out


def is_reformat_retry(body: dict) -> bool:
    return body["messages"][-1]["role"] == "user" and body["messages"][-1]["content"].startswith(
        "Your previous response could not be parsed as valid JSON"
    )


# --- each level succeeding --------------------------------------------------------------------


async def test_level_native_succeeds_with_one_forced_function_call(scripted_llm, make_llm):
    scripted_llm.script(native())

    result = await structured_llm_call(
        make_llm(), ASK, schema=SCHEMA, function_name="select_tools", function_description="Pick tools."
    )

    assert (result.value, result.raw, result.level, result.attempts) == (GOOD, GOOD, "native", 1)
    body = scripted_llm.last_request
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "select_tools", "description": "Pick tools.", "parameters": SCHEMA},
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "select_tools"}}
    assert body["temperature"] == 0.0


async def test_level_json_mode_succeeds_when_the_model_has_no_tool_calling(scripted_llm, make_llm):
    scripted_llm.script(json_text())

    result = await structured_llm_call(make_llm(tool_call=False), ASK, schema=SCHEMA)

    assert (result.value, result.level, result.attempts) == (GOOD, "json_mode", 1)
    assert kinds(scripted_llm.requests) == ["json_mode"]


async def test_level_plain_text_extracts_json_from_prose(scripted_llm, make_llm):
    scripted_llm.script(text('Sure! Here it is:\n```json\n{"tools": ["search"]}\n```\nAnything else?'))

    result = await structured_llm_call(make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA)

    assert (result.value, result.level, result.attempts) == (GOOD, "plain_text", 1)
    assert kinds(scripted_llm.requests) == ["plain_text"]


# --- each edge of the fallback diagram --------------------------------------------------------


async def test_level_native_failure_degrades_to_json_mode(scripted_llm, make_llm):
    scripted_llm.script(text("I will not call the function."), json_text())

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert (result.level, result.attempts) == ("json_mode", 2)
    assert kinds(scripted_llm.requests) == ["native", "json_mode"]


async def test_level_native_broken_arguments_degrade_to_json_mode(scripted_llm, make_llm):
    scripted_llm.script(native('{"tools": ["search"'), json_text())

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert result.level == "json_mode"


async def test_json_mode_failure_is_retried_once_with_the_reformat_prompt(scripted_llm, make_llm):
    scripted_llm.script(PROSE, json_text())

    result = await structured_llm_call(make_llm(tool_call=False), ASK, schema=SCHEMA)

    assert (result.level, result.attempts) == ("json_mode", 2)
    retry = scripted_llm.requests[1]
    assert retry["response_format"] == {"type": "json_object"}
    assert is_reformat_retry(retry)
    assert retry["messages"][-2] == {"role": "assistant", "content": "I think the search tool would help."}
    assert json.dumps(SCHEMA, sort_keys=True) in retry["messages"][-1]["content"]


async def test_json_mode_retry_failure_degrades_to_plain_text(scripted_llm, make_llm):
    scripted_llm.script(PROSE, PROSE, json_text())

    result = await structured_llm_call(make_llm(tool_call=False), ASK, schema=SCHEMA)

    assert (result.level, result.attempts) == ("plain_text", 3)
    assert kinds(scripted_llm.requests) == ["json_mode", "json_mode", "plain_text"]
    assert not is_reformat_retry(scripted_llm.requests[2])


async def test_plain_text_failure_is_retried_once_with_the_reformat_prompt(scripted_llm, make_llm):
    scripted_llm.script(PROSE, json_text())

    result = await structured_llm_call(make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA)

    assert (result.level, result.attempts) == ("plain_text", 2)
    assert is_reformat_retry(scripted_llm.requests[1])
    assert scripted_llm.requests[1]["messages"][-2]["content"] == "I think the search tool would help."


async def test_plain_text_retry_failure_returns_the_default_value(scripted_llm, make_llm):
    scripted_llm.script(PROSE, PROSE)
    fallback = {"tools": []}

    result = await structured_llm_call(
        make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA, default_value=fallback
    )

    assert result.value is fallback
    assert (result.raw, result.level, result.attempts) == (None, "default", 2)


async def test_plain_text_retry_failure_without_default_raises_structured_output_error(
    scripted_llm, make_llm
):
    scripted_llm.script(PROSE, text("Still no JSON, sorry."))

    with pytest.raises(StructuredOutputError) as caught:
        await structured_llm_call(make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA)

    assert caught.value.attempts == 2
    assert caught.value.last_raw_text == "Still no JSON, sorry."


async def test_a_default_of_none_is_returned_rather_than_raising(scripted_llm, make_llm):
    scripted_llm.script(PROSE, PROSE)

    result = await structured_llm_call(
        make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA, default_value=None
    )

    assert (result.value, result.level) == (None, "default")


# --- maximum call counts ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_call", "json_mode", "expected"),
    [
        (True, True, ["native", "json_mode", "json_mode", "plain_text", "plain_text"]),
        (False, True, ["json_mode", "json_mode", "plain_text", "plain_text"]),
        (False, False, ["plain_text", "plain_text"]),
        (True, False, ["native", "plain_text", "plain_text"]),
    ],
    ids=["tool_call+json_mode=5", "json_mode_only=4", "plain_text_only=2", "tool_call_only=3"],
)
async def test_maximum_llm_calls_per_ability_set(scripted_llm, make_llm, tool_call, json_mode, expected):
    scripted_llm.script(*[PROSE] * 10)

    with pytest.raises(StructuredOutputError) as caught:
        await structured_llm_call(make_llm(tool_call=tool_call, json_mode=json_mode), ASK, schema=SCHEMA)

    assert kinds(scripted_llm.requests) == expected
    assert caught.value.attempts == len(expected)
    assert scripted_llm.pending == 10 - len(expected)


# --- failures that degrade --------------------------------------------------------------------


async def test_llm_error_counts_as_a_failed_attempt_and_degrades(scripted_llm, make_llm):
    scripted_llm.script(error(500), json_text())

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert (result.level, result.attempts) == ("json_mode", 2)


async def test_only_llm_errors_still_end_in_structured_output_error_with_the_cause(scripted_llm, make_llm):
    scripted_llm.script(*[error(503)] * 5)

    with pytest.raises(StructuredOutputError) as caught:
        await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert caught.value.attempts == 5
    assert isinstance(caught.value.last_error, LLMError)
    assert caught.value.__cause__ is caught.value.last_error


async def test_parse_fn_exception_degrades_to_the_next_level(scripted_llm, make_llm):
    scripted_llm.script(native({"tools": []}), json_text({"tools": ["search", "fetch"]}))

    def at_least_one(raw: dict) -> tuple[str, ...]:
        if not raw["tools"]:
            raise ValueError("no tools selected")
        return tuple(raw["tools"])

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA, parse_fn=at_least_one)

    assert result.value == ("search", "fetch")
    assert result.raw == {"tools": ["search", "fetch"]}
    assert result.level == "json_mode"


async def test_json_that_violates_the_schema_degrades(scripted_llm, make_llm):
    scripted_llm.script(native({"tool": "search"}), json_text())

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert result.level == "json_mode"


async def test_schema_violation_is_explained_in_the_reformat_prompt(scripted_llm, make_llm):
    scripted_llm.script(json_text({"tool": "search"}), json_text())

    await structured_llm_call(make_llm(tool_call=False), ASK, schema=SCHEMA)

    assert "'tools' is a required property" in scripted_llm.requests[1]["messages"][-1]["content"]


async def test_schema_validation_can_be_left_to_parse_fn(scripted_llm, make_llm):
    scripted_llm.script(native({"tool": "search"}))

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA, validate_schema=False)

    assert (result.value, result.level) == ({"tool": "search"}, "native")


# --- regex fallback ---------------------------------------------------------------------------


def tools_line(raw_text: str) -> dict | None:
    match = re.search(r"tools:\s*(.+)", raw_text)
    return {"tools": [t.strip() for t in match.group(1).split(",")]} if match else None


async def test_regex_fallback_is_used_when_no_json_is_found_in_plain_text(scripted_llm, make_llm):
    scripted_llm.script(text("tools: search, fetch"))

    result = await structured_llm_call(
        make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA, regex_fallback=tools_line
    )

    assert (result.value, result.level, result.attempts) == ({"tools": ["search", "fetch"]}, "plain_text", 1)


async def test_regex_fallback_is_not_used_in_json_mode(scripted_llm, make_llm):
    scripted_llm.script(text("tools: search"), json_text())

    result = await structured_llm_call(
        make_llm(tool_call=False), ASK, schema=SCHEMA, regex_fallback=tools_line
    )

    assert (result.level, result.attempts) == ("json_mode", 2)


async def test_regex_fallback_that_raises_counts_as_a_failed_attempt(scripted_llm, make_llm):
    scripted_llm.script(PROSE, json_text())

    def broken(raw_text: str) -> dict | None:
        raise RuntimeError("bad pattern")

    result = await structured_llm_call(
        make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA, regex_fallback=broken
    )

    assert (result.level, result.attempts) == ("plain_text", 2)


# --- prompts, usage, function choice ----------------------------------------------------------


async def test_schema_is_told_to_the_model_in_json_mode_and_plain_text(scripted_llm, make_llm):
    scripted_llm.script(PROSE, PROSE, json_text())
    messages = [{"role": "system", "content": "You pick tools."}, *ASK]

    await structured_llm_call(make_llm(tool_call=False), messages, schema=SCHEMA)

    schema_text = json.dumps(SCHEMA, sort_keys=True)
    for body in scripted_llm.requests:
        system = [m for m in body["messages"] if m["role"] == "system"]
        assert len(system) == 1
        assert system[0]["content"].startswith("You pick tools.")
        assert schema_text in system[0]["content"]
    assert messages[0] == {"role": "system", "content": "You pick tools."}  # caller's list untouched


async def test_schema_instruction_becomes_the_system_message_when_there_is_none(scripted_llm, make_llm):
    scripted_llm.script(json_text())

    await structured_llm_call(make_llm(tool_call=False), ASK, schema=SCHEMA)

    first = scripted_llm.last_request["messages"][0]
    assert first["role"] == "system"
    assert "JSON" in first["content"]
    assert scripted_llm.last_request["messages"][1:] == ASK


async def test_usage_is_accumulated_across_all_attempts(scripted_llm, make_llm):
    def used(prompt: int, completion: int) -> dict[str, int]:
        return {"prompt_tokens": prompt, "completion_tokens": completion}

    scripted_llm.script(
        text("no call", usage=used(10, 1)),
        text("no json", usage=used(20, 2)),
        text(json.dumps(GOOD), usage=used(30, 3)),
    )

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert result.usage.as_dict() == {
        "prompt_tokens": 60,
        "completion_tokens": 6,
        "total_tokens": 66,
        "calls": 3,
    }


async def test_usage_is_reported_with_the_default_value(scripted_llm, make_llm):
    scripted_llm.script(text("no", usage={"prompt_tokens": 5, "completion_tokens": 1}), PROSE)

    result = await structured_llm_call(
        make_llm(tool_call=False, json_mode=False), ASK, schema=SCHEMA, default_value={}
    )

    assert result.level == "default"
    assert result.usage.calls == 2
    assert result.usage.prompt_tokens >= 5


async def test_native_level_prefers_the_call_to_the_requested_function(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(call("something_else", {"x": 1}), call("structured_output", {"tools": ["fetch"]}))
    )

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert result.value == {"tools": ["fetch"]}


async def test_native_level_accepts_double_encoded_arguments(scripted_llm, make_llm):
    scripted_llm.script(native(json.dumps(json.dumps(GOOD))))

    result = await structured_llm_call(make_llm(), ASK, schema=SCHEMA)

    assert (result.value, result.level) == (GOOD, "native")


def test_reformat_prompt_is_the_spec_sentence():
    assert REFORMAT_PROMPT.startswith("Your previous response could not be parsed as valid JSON")


# --- extract_json -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw_text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": 1}\n', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here you go:\n```JSON\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ('The answer is {"a": 1} as requested.', {"a": 1}),
        ('Outer {"a": {"b": {"c": 3}}} tail', {"a": {"b": {"c": 3}}}),
        ('Text {"s": "a } brace and a { brace"} end', {"s": "a } brace and a { brace"}),
        ('{"s": "escaped \\" quote }"}', {"s": 'escaped " quote }'}),
        ('Use {curly} words then {"a": 1}', {"a": 1}),
        ('{"a": 1, "b": [1, 2,],}', {"a": 1, "b": [1, 2]}),
        ('prose {"a": 1,} more prose', {"a": 1}),
        ('{"first": 1} and {"second": 2}', {"first": 1}),
        ('[{"a": 1}, {"b": 2}]', {"a": 1}),
        ('中文说明：{"答案": "巴黎"}', {"答案": "巴黎"}),
        ("[1, 2, 3]", None),
        ("no json here", None),
        ("{not: json}", None),
        ('{"unterminated": ', None),
        ("", None),
        (None, None),
        ('"just a string"', None),
    ],
)
def test_extract_json_corpus(raw_text, expected):
    assert extract_json(raw_text) == expected
