"""The streamed answer's own SSE decoding: ``sse_lines`` and ``sse_payloads`` on their own, and
``OpenAICompatibleLLM.stream_chat`` reading raw event streams from the scripted server through the SDK."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import openai
import pytest

from agents.engine.llm import (
    ContextLengthExceededError,
    LLMError,
    OpenAICompatibleLLM,
    Usage,
)
from agents.engine.sse import sse_lines, sse_payloads
from tests.fakes.openai_server import event_stream, text

ASK = [{"role": "user", "content": "What is the capital of France?"}]
DONE = b"data: [DONE]\n\n"


def event(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def content(piece: str) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": piece}}]}


def usage_chunk(prompt: int, completion: int) -> dict[str, Any]:
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}}


async def source(*items: Any) -> AsyncIterator[Any]:
    for item in items:
        yield item


async def lines_of(*chunks: bytes) -> list[str]:
    return [line async for line in sse_lines(source(*chunks))]


async def payloads_of(*lines: str) -> list[dict[str, Any]]:
    return [payload async for payload in sse_payloads(source(*lines))]


async def collect(llm: OpenAICompatibleLLM, usage: Usage | None = None) -> list[str]:
    return [delta async for delta in llm.stream_chat(ASK, usage=usage)]


class Gate:
    """A source that hands out its items one at a time, only when the test says so."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    async def __aiter__(self) -> AsyncIterator[Any]:
        while (item := await self.queue.get()) is not None:
            yield item


# --- sse_lines --------------------------------------------------------------------------------


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["lf", "crlf", "cr"])
async def test_lines_end_at_lf_crlf_and_cr(end):
    assert await lines_of(b"data: a" + end + end + b": ping" + end) == ["data: a", "", ": ping"]


async def test_a_crlf_split_between_two_chunks_ends_one_line():
    assert await lines_of(b"data: a\r", b"\n\r", b"\ndata: b\r\n") == ["data: a", "", "data: b"]


async def test_a_line_split_between_chunks_is_joined_including_a_split_utf8_character():
    word = "Parisé".encode()

    assert await lines_of(b"da", b"ta: " + word[:-1], word[-1:] + b"\n") == ["data: Parisé"]


async def test_unicode_line_separators_inside_a_line_do_not_split_it():
    line = 'data: {"content": "a\u2028b\u2029c\x85d"}'

    assert await lines_of(line.encode() + b"\n") == [line]


async def test_a_leading_byte_order_mark_is_dropped_and_a_last_unterminated_line_is_kept():
    assert await lines_of(b"\xef\xbb\xbfdata: a\n", b"data: b") == ["data: a", "data: b"]


async def test_each_line_is_yielded_as_soon_as_its_chunk_arrives():
    gate = Gate()
    lines = sse_lines(gate)

    gate.queue.put_nowait(b"data: first\n")
    first = await asyncio.wait_for(anext(lines), 1)
    gate.queue.put_nowait(b"data: second\n")
    second = await asyncio.wait_for(anext(lines), 1)
    await lines.aclose()

    assert (first, second) == ("data: first", "data: second")


# --- sse_payloads -----------------------------------------------------------------------------


async def test_a_payload_split_over_several_data_lines_is_joined():
    payloads = await payloads_of(
        'data: {"choices": [', 'data:{"delta": {"content": "Paris"}}', "data: ]}", ""
    )

    assert payloads == [{"choices": [{"delta": {"content": "Paris"}}]}]


async def test_comments_event_id_retry_and_unknown_fields_are_ignored():
    payloads = await payloads_of(
        ": keep-alive",
        "",
        "event: ping",
        "",
        "id: 7",
        "retry: 1000",
        "event: message",
        "x-vendor: whatever",
        'data: {"n": 1}',
        ":",
        "",
    )

    assert payloads == [{"n": 1}]


async def test_events_without_data_are_skipped():
    assert await payloads_of("data:", "", "data", "", 'data: {"n": 2}', "") == [{"n": 2}]


async def test_done_ends_the_stream_without_reading_further():
    async def lines() -> AsyncIterator[str]:
        yield 'data: {"n": 1}'
        yield ""
        yield "data: [DONE]"
        yield ""
        raise AssertionError("read past [DONE]")

    assert [p async for p in sse_payloads(lines())] == [{"n": 1}]


async def test_an_event_left_unfinished_when_the_stream_ends_is_discarded():
    assert await payloads_of('data: {"n": 1}', "", 'data: {"n": 2}') == [{"n": 1}]


@pytest.mark.parametrize("data", ["{broken", "[1, 2]", '"text"'], ids=["invalid-json", "list", "string"])
async def test_data_that_is_not_a_json_object_raises_value_error(data):
    with pytest.raises(ValueError):
        await payloads_of(f"data: {data}", "")


async def test_each_payload_is_yielded_as_soon_as_its_event_ends():
    gate = Gate()
    payloads = sse_payloads(gate)

    for line in ('data: {"n": 1}', ""):
        gate.queue.put_nowait(line)
    first = await asyncio.wait_for(anext(payloads), 1)
    await payloads.aclose()

    assert first == {"n": 1}


# --- stream_chat over raw event streams --------------------------------------------------------


async def test_stream_decodes_split_payloads_between_comments_and_named_events(scripted_llm, make_llm):
    scripted_llm.script(
        event_stream(
            b": OPENROUTER PROCESSING\n\n",
            b'event: message\nid: 1\ndata: {"choices": [{"index": 0,\ndata:  "delta": {"content": "Par"}}]}\n\n',
            b": keep-alive\r\n\r\n",
            b'data: {"choices": [{"index": 0, "delta": {"content": "is."}}]}\r\n\r\n',
            event(usage_chunk(11, 2)),
            DONE,
        )
    )
    usage = Usage()

    deltas = await collect(make_llm(), usage)

    assert deltas == ["Par", "is."]
    assert usage == Usage(prompt_tokens=11, completion_tokens=2, total_tokens=13, calls=1)


async def test_stream_keeps_unicode_line_separators_inside_content(scripted_llm, make_llm):
    # The scripted server writes JSON with ensure_ascii=False, as several providers do.
    scripted_llm.script(text("one\u2028two\x85three", chunk_size=50))

    assert "".join(await collect(make_llm())) == "one\u2028two\x85three"


async def test_stream_yields_the_first_delta_before_the_rest_of_the_answer_is_sent(scripted_llm, make_llm):
    scripted_llm.script(event_stream(event(content("Paris")), 5.0, event(content(" later")), DONE))
    stream = make_llm().stream_chat(ASK)
    try:
        first = await asyncio.wait_for(anext(stream), 2)
    finally:
        await stream.aclose()

    assert first == "Paris"


async def test_stream_ends_at_done_even_when_the_server_keeps_the_body_open(scripted_llm, make_llm):
    scripted_llm.script(event_stream(event(content("Paris")), DONE, 30.0))

    deltas = await asyncio.wait_for(collect(make_llm()), 2)

    assert deltas == ["Paris"]


async def test_streams_reuse_one_connection(scripted_llm, make_llm):
    scripted_llm.script(text("one"), text("two"), text("three"))
    llm = make_llm()

    answers = ["".join(await collect(llm)) for _ in range(3)]

    assert answers == ["one", "two", "three"]
    assert len(scripted_llm.peers) == 3 and len(set(scripted_llm.peers)) == 1


async def test_a_stream_with_only_done_is_malformed(scripted_llm, make_llm):
    scripted_llm.script(event_stream(b": ping\n\n", DONE))

    with pytest.raises(LLMError, match="malformed response: the stream ended without any event"):
        await collect(make_llm())


async def test_an_error_event_mid_stream_raises_llm_error_with_its_message(scripted_llm, make_llm):
    scripted_llm.script(
        event_stream(
            event(content("Par")),
            event({"error": {"message": "The server overloaded.", "type": "server_error", "code": None}}),
        )
    )
    received: list[str] = []

    with pytest.raises(LLMError) as caught:
        async for delta in make_llm().stream_chat(ASK):
            received.append(delta)

    assert received == ["Par"]
    assert str(caught.value) == "scripted-model at 127.0.0.1: APIError: The server overloaded."
    assert caught.value.status_code is None
    assert type(caught.value.__cause__) is openai.APIError


async def test_a_context_length_error_event_raises_context_length_exceeded(scripted_llm, make_llm):
    scripted_llm.script(
        event_stream(event({"error": {"message": "Too long.", "code": "context_length_exceeded"}}))
    )

    with pytest.raises(ContextLengthExceededError):
        await collect(make_llm())


async def test_a_choice_without_a_delta_is_skipped(scripted_llm, make_llm):
    # Azure's asynchronous content filter sends choices carrying only filter results.
    filtered = {"choices": [{"index": 0, "finish_reason": None, "content_filter_results": {}}]}
    scripted_llm.script(event_stream(event(content("Paris")), event(filtered), DONE))

    assert await collect(make_llm()) == ["Paris"]


@pytest.mark.parametrize(
    "chunk",
    [
        {"choices": {"0": {"delta": {"content": "x"}}}},
        {"choices": ["x"]},
        {"choices": [{"delta": "x"}]},
        {"choices": [{"delta": {"content": 7}}]},
        {"choices": [], "usage": "many"},
        {"choices": [], "usage": {"prompt_tokens": "3"}},
    ],
    ids=["choices-object", "choice-string", "delta-string", "content-number", "usage-string", "usage-text"],
)
async def test_chunks_of_the_wrong_shape_raise_malformed_response(scripted_llm, make_llm, chunk):
    scripted_llm.script(event_stream(event(chunk), DONE))

    with pytest.raises(LLMError, match="malformed response"):
        await collect(make_llm())


async def test_a_stream_that_stalls_mid_answer_times_out_as_the_sdk_would(scripted_llm, make_llm):
    scripted_llm.script(event_stream(event(content("Paris")), 30.0))
    received: list[str] = []

    with pytest.raises(LLMError, match="APITimeoutError") as caught:
        async for delta in make_llm(timeout=0.5).stream_chat(ASK):
            received.append(delta)

    assert received == ["Paris"]
    assert isinstance(caught.value.__cause__, openai.APITimeoutError)
    assert isinstance(caught.value.__cause__.__cause__, httpx2.ReadTimeout)


async def test_a_dropped_connection_mid_answer_is_a_connection_error(scripted_llm, make_llm):
    scripted_llm.script(text("one two three four five six", die_after_chunks=1))

    with pytest.raises(LLMError, match="APIConnectionError: Connection error") as caught:
        await collect(make_llm())

    assert type(caught.value.__cause__) is openai.APIConnectionError


async def test_cancelling_the_consumer_releases_the_connection(scripted_llm, one_connection_llm):
    # One pooled connection: if the cancelled stream kept it, the next call could not get one.
    llm = one_connection_llm
    scripted_llm.script(event_stream(event(content("Paris")), 30.0), text("next"))
    first_delta = asyncio.Event()
    usage = Usage()

    async def consume() -> None:
        async for _ in llm.stream_chat(ASK, usage=usage):
            first_delta.set()

    task = asyncio.create_task(consume())
    try:
        await asyncio.wait_for(first_delta.wait(), 2)
    finally:
        task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    response = await llm.chat(ASK)

    assert response.content == "next"
    assert usage.calls == 1
