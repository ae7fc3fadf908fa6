"""The assembly of a streamed reply from the chunk shapes providers send (see agents.engine.stream_assembly)."""

from __future__ import annotations

import pytest

from agents.engine.stream_assembly import StreamAssembly

SENT = [{"role": "user", "content": "q"}]


def chunk(delta=None, finish=None, **extra):
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish, **extra}]
    return {"id": "x", "model": "m", "choices": choices}


def assemble(*chunks):
    assembly = StreamAssembly()
    for c in chunks:
        assembly.add(c)
    return assembly.response(SENT)


def test_calls_without_index_are_told_apart_by_id_and_continued_in_order():
    reply = assemble(
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"function": {"arguments": '{"x":'}}]}),
        chunk({"tool_calls": [{"function": {"arguments": " 1}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
    )
    assert [(c.id, c.name, c.arguments) for c in reply.tool_calls] == [
        ("a", "f", '{"x": 1}'),
        ("b", "g", "{}"),
    ]


def test_a_reused_index_with_a_new_id_starts_a_new_call():
    reply = assemble(
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "g", "arguments": "{}"}}]}),
        chunk({}, "stop"),
    )
    assert [c.id for c in reply.tool_calls] == ["a", "b"]
    assert reply.finish_reason == "stop"  # the calls count all the same


def test_an_empty_id_on_continuation_chunks_keeps_the_call_its_index_names():
    reply = assemble(
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "{}"}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "", "function": {"arguments": "[]"}}]}),
    )
    assert [(c.id, c.arguments) for c in reply.tool_calls] == [("a", "{}"), ("b", "[]")]


def test_a_call_without_an_id_gets_one():
    reply = assemble(chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}))
    assert reply.tool_calls[0].id == "call_0"


def test_content_stays_null_when_none_came_and_empty_when_empty_came():
    calls = {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{}"}}]}
    assert assemble(chunk({"role": "assistant", "content": None}), chunk(calls)).content is None
    assert assemble(chunk({"role": "assistant", "content": ""}), chunk(calls)).content == ""


@pytest.mark.parametrize(
    "last",
    [
        {"id": "x", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
        {**chunk({}, "stop"), "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
        chunk({}, "stop", usage={"prompt_tokens": 5, "completion_tokens": 2}),
    ],
    ids=["empty-choices", "last-chunk", "in-choice"],
)
def test_the_usage_is_read_wherever_the_provider_puts_it(last):
    reply = assemble(chunk({"content": "hi"}), last)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.total_tokens) == (5, 2, 7)


def test_reasoning_is_kept_apart_from_the_content_under_its_field():
    reply = assemble(
        chunk({"reasoning_content": "think "}),
        chunk({"reasoning_content": "more"}),
        chunk({"content": "answer"}),
    )
    assert (reply.content, reply.reasoning_content) == ("answer", "think more")
    assert reply.reasoning_fields == {"reasoning_content": "think more"}


def test_a_call_without_a_name_is_a_malformed_reply():
    with pytest.raises(ValueError, match="no function name"):
        assemble(chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": "{}"}}]}))
