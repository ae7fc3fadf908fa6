"""Strict decoding of model output (issue #14, High): every place the engine decodes a model's JSON refuses
what Python's lenient decoder takes (NaN, Infinity, duplicate keys, text after the value, lone surrogates),
so a guard rail never judges a value the tool would read differently. And the storable form of any value.

Each corpus is a list: add to it when a new trick is found.
"""

from __future__ import annotations

import json
import math

import pytest

from agents.engine.completion import chat_response
from agents.engine.llm import ToolCallRequest
from agents.engine.parsing import decode_arguments, native_tool_call, parse_action
from agents.engine.plan.graph import json_array
from agents.engine.strict_json import (
    StrictJSONError,
    dumps_storable,
    json_safe,
    loads_strict,
    text_safe,
)
from agents.engine.structured import extract_json, structured_llm_call
from tests.fakes.openai_server import call, text, tool_calls

# (raw JSON object text, a word the refusal names)
NOT_STRICT_OBJECTS = [
    ('{"order_id": "SO-1002", "amount": NaN}', "NaN"),
    ('{"amount": Infinity}', "Infinity"),
    ('{"amount": -Infinity}', "-Infinity"),
    ('{"amount": 1e999}', "finite"),
    ('{"amount": -1e400}', "finite"),
    ('{"amount": 1, "amount": 99999}', "twice"),
    ('{"order": {"id": "SO-1", "total": 5, "total": 90000}}', "twice"),
    ('{"lines": [{"sku": "a", "qty": 1}, {"qty": 1, "qty": 2}]}', "twice"),
    ('{"amount": [1, [2, NaN]]}', "NaN"),
    ('{"note": "\\ud800"}', "surrogate"),
    ('{"\\udfff": 1}', "surrogate"),
    ('{"amount": 1} {"amount": 90000}', "Extra data"),
    ('{"amount": 1} trailing words', "Extra data"),
    ('{"amount": 1,}', "property name"),
    ('{"amount": ' + "9" * 5000 + "}", "digits"),
    ("{'amount': 1}", "property name"),
]


@pytest.mark.parametrize(("raw", "named"), NOT_STRICT_OBJECTS)
def test_the_strict_decoder_refuses_what_python_json_would_bend(raw, named):
    with pytest.raises(StrictJSONError) as caught:
        loads_strict(raw)
    assert named.lower() in caught.value.reason.lower()


@pytest.mark.parametrize(("raw", "named"), NOT_STRICT_OBJECTS)
def test_native_tool_call_arguments_that_are_not_strict_json_are_an_error_not_a_call(raw, named):
    args, error = decode_arguments(raw)
    assert args == {}
    assert error is not None and named.lower() in error.lower()


# Text after the object ends the action itself, and JSON mode forgives trailing commas (no value changes).
JSON_MODE_CORPUS = [c for c in NOT_STRICT_OBJECTS if "Extra" not in c[1] and not c[0].endswith(",}")]


@pytest.mark.parametrize(("raw", "named"), JSON_MODE_CORPUS)
def test_a_json_mode_action_with_non_strict_arguments_is_not_a_tool_call(raw, named):
    reply = '{"reasoning": "pay", "action": {"type": "tool_call", "tool_name": "erp__create_payment", '
    reply += f'"tool_args": {raw}}}}}'
    action = parse_action(reply)
    assert action.parse_failed and action.tool_name == ""


@pytest.mark.parametrize(
    "raw",
    [
        '{"amount": NaN}',
        '{"amount": 1, "amount": 2}',
        '{"amount": Infinity}',
    ],
)
def test_json_mode_arguments_sent_as_a_string_are_decoded_strictly_too(raw):
    reply = json.dumps({"action": {"type": "tool_call", "tool_name": "pay", "tool_args": raw}})
    action = parse_action(reply)
    assert not action.parse_failed and action.tool_name == "pay"
    args, error = decode_arguments(action.tool_args)
    assert args == {} and error


def test_extraction_from_prose_does_not_skip_past_a_refused_object_to_a_later_one():
    # The first object is what the model meant; a later, harmless-looking one must not stand in for it.
    reply = 'Paying now: {"amount": NaN} (or, if you prefer, {"amount": 1})'
    assert extract_json(reply) is None
    assert extract_json('Here: {"amount": 1} and more prose') == {"amount": 1}


def test_a_refused_json_mode_reply_tells_the_model_what_was_wrong():
    action = parse_action('{"action": {"type": "tool_call", "tool_name": "pay", "tool_args": {"a": NaN}}}')
    assert action.parse_failed and "NaN" in action.problem


@pytest.mark.parametrize("raw", ["[1, NaN]", '[{"id": "1", "id": "2"}]', "[Infinity]"])
def test_a_plan_array_that_is_not_strict_json_is_refused(raw):
    assert json_array(raw) is None
    assert json_array(f"```json\n{raw}\n```") is None


def test_strict_json_still_reads_ordinary_json():
    assert loads_strict('  {"a": [1, 2.5, -3e2, true, null, "\\u00e9\\ud83d\\ude00"], "b": {}}\n') == {
        "a": [1, 2.5, -300.0, True, None, "é😀"],
        "b": {},
    }
    assert decode_arguments('{"order_id": "SO-1002", "amount": 60000}') == (
        {"order_id": "SO-1002", "amount": 60000},
        None,
    )


def _completion(function: str, usage: str = '{"prompt_tokens": 1, "completion_tokens": 1}') -> bytes:
    call = f'{{"id": "c1", "type": "function", "function": {function}}}'
    return f'{{"choices": [{{"message": {{"content": null, "tool_calls": [{call}]}}}}], "usage": {usage}}}'.encode()


def test_a_completion_body_cannot_smuggle_a_non_finite_number_into_a_tool_call():
    # arguments as an object (not the JSON string the protocol says) are refused with the body
    with pytest.raises(ValueError):
        chat_response(_completion('{"name": "pay", "arguments": {"amount": NaN}}'), [])
    # a NaN where we read a number is refused too
    with pytest.raises(ValueError):
        chat_response(_completion('{"name": "pay", "arguments": "{}"}', '{"prompt_tokens": NaN}'), [])
    # and NaN inside the arguments string reaches the strict decoder, which refuses it
    response = chat_response(_completion('{"name": "pay", "arguments": "{\\"amount\\": NaN}"}'), [])
    [request] = response.tool_calls
    assert request == ToolCallRequest("c1", "pay", '{"amount": NaN}')
    call_ = native_tool_call(request)
    assert call_.args == {} and "NaN" in (call_.args_error or "")


NUMBER_SCHEMA = {"type": "object", "properties": {"n": {"type": "number"}}, "required": ["n"]}


async def test_structured_output_with_a_non_finite_number_degrades_instead_of_being_used(
    scripted_llm, make_llm
):
    scripted_llm.script(tool_calls(call("structured_output", '{"n": NaN}')), text('{"n": 7}'))
    result = await structured_llm_call(
        make_llm(tool_call=True, json_mode=True),
        [{"role": "user", "content": "n?"}],
        schema=NUMBER_SCHEMA,
    )
    assert result.value == {"n": 7} and result.level == "json_mode"


# --- the storable form ----------------------------------------------------------------------------


class _Odd:
    def __repr__(self) -> str:
        return "Odd()"


UNSTORABLE = [
    (math.nan, "NaN"),
    (math.inf, "Infinity"),
    (-math.inf, "-Infinity"),
    ("a\x00b", "a\\u0000b"),
    ("x\ud800y", "x\\ud800y"),
    (b"raw", "<unstorable bytes: b'raw'>"),
    (_Odd(), "<unstorable _Odd: Odd()>"),
    ({1, 2}, "<unstorable set: {1, 2}>"),
    (2**20000, "<unstorable int: 20001 bits>"),
]


@pytest.mark.parametrize(("value", "stored"), UNSTORABLE, ids=[stored for _, stored in UNSTORABLE])
def test_json_safe_gives_every_unstorable_value_a_readable_form(value, stored):
    assert json_safe({"v": value, "nested": [{"v": value}]}) == {"v": stored, "nested": [{"v": stored}]}
    assert json.loads(dumps_storable({"v": value})) == {"v": stored}


def test_json_safe_leaves_storable_values_alone_and_fixes_keys():
    value = {"a": [1, 2.5, True, None, "é😀"], "b": {"c": "d"}}
    assert json_safe(value) == value
    assert json_safe({1: "x", "k\x00": (1, 2)}) == {"1": "x", "k\\u0000": [1, 2]}
    deep: list = []
    for _ in range(2000):
        deep = [deep]
    assert "<nested too deeply>" in dumps_storable(deep)
    assert text_safe("plain") == "plain"
