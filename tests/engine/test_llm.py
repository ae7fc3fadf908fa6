"""OpenAICompatibleLLM against the scripted OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import json

import openai
import pytest

from agents.engine.llm import (
    DEFAULT_ABILITIES,
    LLM,
    ContextLengthExceededError,
    LLMError,
    OpenAICompatibleLLM,
    Usage,
    get_shared_client,
)
from tests.fakes.openai_server import (
    call,
    context_length_error,
    error,
    hang,
    malformed,
    text,
    tool_calls,
)

ASK = [{"role": "user", "content": "What is the capital of France?"}]
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}


async def collect(llm: LLM, usage: Usage | None = None) -> list[str]:
    return [delta async for delta in llm.stream_chat(ASK, usage=usage)]


# --- chat() -----------------------------------------------------------------------------------


async def test_chat_returns_content_usage_and_finish_reason(scripted_llm, make_llm):
    scripted_llm.script(text("Paris.", usage={"prompt_tokens": 12, "completion_tokens": 2}))

    response = await make_llm().chat(ASK)

    assert response.content == "Paris."
    assert response.tool_calls == ()
    assert response.finish_reason == "stop"
    assert response.model == "scripted-model"
    assert response.usage == Usage(prompt_tokens=12, completion_tokens=2, total_tokens=14, calls=1)


async def test_chat_returns_tool_calls_with_raw_argument_strings(scripted_llm, make_llm):
    scripted_llm.script(
        tool_calls(
            call("search", {"q": "Paris"}, id="call_a"),
            call("fetch", '{"url": "http://x", ', id="call_b"),  # broken JSON stays raw
        )
    )

    response = await make_llm().chat(ASK, tools=[SEARCH_TOOL])

    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("call_a", "search", '{"q": "Paris"}'),
        ("call_b", "fetch", '{"url": "http://x", '),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.assistant_message()["tool_calls"][0]["function"]["name"] == "search"


async def test_reasoning_content_is_passed_through(scripted_llm, make_llm):
    scripted_llm.script(text("42", reasoning_content="Six times seven."))

    response = await make_llm().chat(ASK)

    assert response.reasoning_content == "Six times seven."
    assert response.content == "42"


async def test_usage_is_estimated_when_the_provider_reports_none(scripted_llm, make_llm):
    scripted_llm.script(text("A fairly long answer about Paris and France.", omit_usage=True))

    response = await make_llm().chat(ASK)

    assert response.usage.prompt_tokens > 0
    assert response.usage.completion_tokens > 0
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens
    assert response.usage.calls == 1


async def test_underscore_metadata_keys_never_leave_the_process(scripted_llm, make_llm):
    scripted_llm.script(text("ok"))
    messages = [
        {"role": "system", "content": "Be brief.", "_pinned": True},
        {"role": "user", "content": "Hi", "_tokens": 3, "_summary": False},
    ]

    await make_llm().chat(messages)

    assert scripted_llm.last_request["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    assert messages[0]["_pinned"] is True  # the caller's history is not mutated


async def test_tools_tool_choice_and_response_format_are_sent_only_when_given(scripted_llm, make_llm):
    scripted_llm.script(text("plain"), text("{}"))
    llm = make_llm()

    await llm.chat(ASK)
    await llm.chat(
        ASK,
        tools=[SEARCH_TOOL],
        tool_choice="required",
        response_format={"type": "json_object"},
        temperature=0.2,
    )

    plain, full = scripted_llm.requests
    assert not {"tools", "tool_choice", "response_format", "temperature"} & plain.keys()
    assert full["tools"] == [SEARCH_TOOL]
    assert full["tool_choice"] == "required"
    assert full["response_format"] == {"type": "json_object"}
    assert full["temperature"] == 0.2


async def test_tool_choice_is_not_sent_without_tools(scripted_llm, make_llm):
    scripted_llm.script(text("plain"))

    await make_llm().chat(ASK, tools=[], tool_choice="auto")

    assert not {"tools", "tool_choice"} & scripted_llm.last_request.keys()


async def test_extra_body_is_merged_into_every_request(scripted_llm, make_llm):
    scripted_llm.script(text("ok"), text("ok"))
    llm = make_llm(extra_body={"enable_thinking": False})

    await llm.chat(ASK)
    await collect(llm)

    assert [r["enable_thinking"] for r in scripted_llm.requests] == [False, False]


def test_abilities_default_to_what_openai_supports():
    llm = OpenAICompatibleLLM(base_url="http://127.0.0.1:9/v1", api_key="k", model="m")

    assert dict(llm.abilities) == {
        "tool_call": True,
        "parallel_tool_calls": True,
        "json_mode": True,
        "forced_tool_choice": True,
        "stream_only": False,
        "reasoning_output": False,
        "vision": False,
    }
    assert isinstance(llm, LLM)


def test_abilities_override_only_the_given_keys():
    llm = OpenAICompatibleLLM(
        base_url="http://127.0.0.1:9/v1", api_key="k", model="m", abilities={"tool_call": False}
    )

    assert dict(llm.abilities) == {**DEFAULT_ABILITIES, "tool_call": False}


# --- stream_chat() ----------------------------------------------------------------------------


async def test_stream_yields_content_deltas_in_order_and_fills_the_usage_sink(scripted_llm, make_llm):
    scripted_llm.script(
        text(
            "The capital of France is Paris.",
            chunk_size=5,
            usage={"prompt_tokens": 9, "completion_tokens": 7},
        )
    )
    usage = Usage()

    deltas = await collect(make_llm(), usage)

    assert deltas == ["The c", "apita", "l of ", "Franc", "e is ", "Paris", "."]
    assert usage == Usage(prompt_tokens=9, completion_tokens=7, total_tokens=16, calls=1)
    assert scripted_llm.last_request["stream"] is True
    assert scripted_llm.last_request["stream_options"] == {"include_usage": True}


async def test_stream_skips_reasoning_deltas(scripted_llm, make_llm):
    scripted_llm.script(text("Answer.", reasoning_content="Let me think about it."))

    assert "".join(await collect(make_llm())) == "Answer."


async def test_stream_usage_is_estimated_when_the_provider_reports_none(scripted_llm, make_llm):
    scripted_llm.script(text("Some streamed answer text.", omit_usage=True))
    usage = Usage(prompt_tokens=100, total_tokens=100, calls=1)

    await collect(make_llm(), usage)

    assert usage.calls == 2
    assert usage.prompt_tokens > 100
    assert usage.completion_tokens > 0


async def test_stream_that_dies_mid_answer_raises_llm_error_after_the_partial_deltas(scripted_llm, make_llm):
    scripted_llm.script(text("one two three four five six seven eight nine", die_after_chunks=2))
    received: list[str] = []

    with pytest.raises(LLMError):
        async for delta in make_llm().stream_chat(ASK):
            received.append(delta)

    assert received == ["one two three ", "four five six "]


async def test_closing_the_stream_early_releases_the_connection(scripted_llm, one_connection_llm):
    # One pooled connection: if the abandoned stream kept it, the next call could not get one.
    llm = one_connection_llm
    scripted_llm.script(text(" ".join(["word"] * 300)), text("next"))
    usage = Usage()
    stream = llm.stream_chat(ASK, usage=usage)
    first = await anext(stream)
    await stream.aclose()

    response = await llm.chat(ASK)

    assert first == "word word word "
    assert response.content == "next"
    assert usage.calls == 1  # the abandoned stream's (estimated) usage is still counted


# --- errors -----------------------------------------------------------------------------------


async def test_server_error_after_the_sdk_retries_raises_llm_error(scripted_llm, make_llm):
    scripted_llm.script(error(500), error(502), error(503))

    with pytest.raises(LLMError) as caught:
        await make_llm(max_retries=2).chat(ASK)

    assert len(scripted_llm.requests) == 3
    assert caught.value.status_code == 503
    assert not isinstance(caught.value, ContextLengthExceededError)
    assert isinstance(caught.value.__cause__, openai.APIStatusError)


async def test_rate_limit_is_retried_by_the_sdk_then_succeeds(scripted_llm, make_llm):
    scripted_llm.script(error(429, message="Rate limit reached", code="rate_limit_exceeded"), text("ok"))

    response = await make_llm(max_retries=1).chat(ASK)

    assert response.content == "ok"
    assert len(scripted_llm.requests) == 2


async def test_timeout_raises_llm_error(scripted_llm, make_llm):
    scripted_llm.script(hang(30))

    with pytest.raises(LLMError) as caught:
        await make_llm(timeout=0.3).chat(ASK)

    assert isinstance(caught.value.__cause__, openai.APITimeoutError)


async def test_stream_timeout_raises_llm_error(scripted_llm, make_llm):
    scripted_llm.script(hang(30))

    with pytest.raises(LLMError):
        await collect(make_llm(timeout=0.3))


async def test_context_length_error_raises_context_length_exceeded(scripted_llm, make_llm):
    scripted_llm.script(context_length_error())

    with pytest.raises(ContextLengthExceededError) as caught:
        await make_llm().chat(ASK)

    assert caught.value.status_code == 400


async def test_context_length_error_on_a_stream_raises_context_length_exceeded(scripted_llm, make_llm):
    scripted_llm.script(context_length_error())

    with pytest.raises(ContextLengthExceededError):
        await collect(make_llm())


async def test_context_length_is_recognised_from_the_message_without_a_code(scripted_llm, make_llm):
    # vLLM-style: a 400 whose only hint is the message.
    scripted_llm.script(
        error(400, message="This model's maximum context length is 4096 tokens. However, you requested 5000.")
    )

    with pytest.raises(ContextLengthExceededError):
        await make_llm().chat(ASK)


async def test_other_bad_requests_are_plain_llm_errors(scripted_llm, make_llm):
    scripted_llm.script(error(400, message="Invalid value for 'temperature'.", code="invalid_value"))

    with pytest.raises(LLMError) as caught:
        await make_llm().chat(ASK)

    assert type(caught.value) is LLMError


@pytest.mark.parametrize(
    "reply",
    [
        malformed(b"not json"),
        malformed(b"<html>Bad gateway</html>", content_type="text/html"),
        malformed(json.dumps({"id": "x", "object": "chat.completion"}).encode()),
    ],
    ids=["invalid-json", "html", "no-choices"],
)
async def test_malformed_response_raises_llm_error(scripted_llm, make_llm, reply):
    scripted_llm.script(reply)

    with pytest.raises(LLMError, match="malformed response"):
        await make_llm().chat(ASK)


@pytest.mark.parametrize(
    "reply",
    [malformed(b"data: {broken\n\n", content_type="text/event-stream"), malformed(b"not an event stream")],
    ids=["broken-event", "no-events"],
)
async def test_malformed_stream_raises_llm_error(scripted_llm, make_llm, reply):
    scripted_llm.script(reply)

    with pytest.raises(LLMError, match="malformed response"):
        await collect(make_llm())


async def test_api_key_never_appears_in_errors_or_repr(scripted_llm):
    key = "sk-very-secret-key-123"
    scripted_llm.script(error(401, message=f"Incorrect API key provided: {key}", code="invalid_api_key"))
    llm = OpenAICompatibleLLM(base_url=scripted_llm.base_url, api_key=key, model="m", max_retries=0)

    with pytest.raises(LLMError) as caught:
        await llm.chat(ASK)

    assert key not in str(caught.value)
    assert "***" in str(caught.value)
    assert key not in repr(llm)


async def test_no_scripted_reply_fails_loudly(scripted_llm, make_llm):
    with pytest.raises(LLMError, match="no reply scripted"):
        await make_llm().chat(ASK)


# --- shared clients ---------------------------------------------------------------------------


async def test_one_shared_client_per_endpoint(scripted_llm, make_llm):
    scripted_llm.script(text("a"), text("b"))
    first, second = make_llm(model="model-a"), make_llm(model="model-b")

    await first.chat(ASK)
    await second.chat(ASK)

    assert first.client() is second.client()
    assert first.client() is get_shared_client(scripted_llm.base_url, "sk-scripted-test", 10.0, 0)
    assert get_shared_client("http://127.0.0.1:9/v1", "sk-scripted-test", 10.0, 0) is not first.client()
    assert get_shared_client(scripted_llm.base_url, "another-key", 10.0, 0) is not first.client()


async def test_an_injected_client_is_used_instead_of_the_shared_one(scripted_llm):
    client = openai.AsyncOpenAI(base_url=scripted_llm.base_url, api_key="sk-test", max_retries=0)
    try:
        llm = OpenAICompatibleLLM(
            base_url="http://127.0.0.1:9/v1", api_key="unused", model="m", client=client
        )
        scripted_llm.script(text("via injected client"))

        response = await llm.chat(ASK)
    finally:
        await client.close()

    assert response.content == "via injected client"


async def test_requests_not_meant_for_the_scripted_server_fail_loudly():
    # The plugin points the SDK's environment defaults at a closed loopback port.
    client = openai.AsyncOpenAI(max_retries=0)
    try:
        assert client.base_url.host == "127.0.0.1"
        with pytest.raises(openai.APIConnectionError):
            await client.chat.completions.create(model="m", messages=ASK)
    finally:
        await client.close()
