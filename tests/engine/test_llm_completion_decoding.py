"""``chat()`` decodes the completion's JSON itself (agents.engine.completion) and sends its request
as a plain dict through the SDK's untyped ``post``: both through the real SDK against the scripted
server. Replies of shapes that ``text()``/``tool_calls()`` cannot script are sent as raw bodies."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from agents.engine.llm import LLMError, OpenAICompatibleLLM, ToolCallRequest, Usage
from tests.fakes.openai_server import error, event_stream, malformed, text

ASK = [{"role": "user", "content": "What is the capital of France?"}]
USAGE = {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}


def completion(message: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A chat.completion body whose first choice carries ``message``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-raw",
        "object": "chat.completion",
        "created": 1,
        "model": "raw-model",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": USAGE,
    }
    body.update(fields)
    return body


def raw(body: Any) -> Any:
    return malformed(json.dumps(body).encode())


def function_call(id: str = "call_1", **function: Any) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": "search", **function}}


# --- shapes that decode -----------------------------------------------------------------------


async def test_a_tool_call_completion_with_null_content_decodes(scripted_llm, make_llm):
    scripted_llm.script(
        raw(completion({"content": None, "tool_calls": [function_call(arguments='{"q": "Paris"}')]}))
    )

    response = await make_llm().chat(ASK)

    assert response.content is None
    assert response.tool_calls == (ToolCallRequest("call_1", "search", '{"q": "Paris"}'),)
    assert response.usage == Usage(10, 3, 13, calls=1)
    assert response.model == "raw-model"
    assert response.assistant_message()["content"] == ""


@pytest.mark.parametrize("tool_calls", [None, []], ids=["null", "empty"])
async def test_null_or_empty_tool_calls_are_no_tool_calls(scripted_llm, make_llm, tool_calls):
    scripted_llm.script(raw(completion({"content": "Paris.", "tool_calls": tool_calls})))

    response = await make_llm().chat(ASK)

    assert response.tool_calls == ()
    assert response.content == "Paris."


@pytest.mark.parametrize("function", [{}, {"arguments": None}], ids=["arguments-missing", "arguments-null"])
async def test_missing_or_null_arguments_are_an_empty_string(scripted_llm, make_llm, function):
    scripted_llm.script(raw(completion({"content": None, "tool_calls": [function_call(**function)]})))

    response = await make_llm().chat(ASK)

    assert response.tool_calls == (ToolCallRequest("call_1", "search", ""),)


async def test_only_function_tool_calls_are_kept_and_a_missing_type_means_function(scripted_llm, make_llm):
    untyped = {"id": "call_2", "function": {"name": "fetch", "arguments": "{}"}}
    custom = {"id": "call_3", "type": "custom", "custom": {"name": "grammar", "input": "x"}}
    scripted_llm.script(
        raw(completion({"content": None, "tool_calls": [function_call(arguments="{}"), custom, untyped]}))
    )

    response = await make_llm().chat(ASK)

    assert [(c.id, c.name) for c in response.tool_calls] == [("call_1", "search"), ("call_2", "fetch")]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"reasoning_content": "Six times seven."}, "Six times seven."),
        ({"reasoning": "Six times seven."}, "Six times seven."),
        ({"reasoning_content": None, "reasoning": "From OpenRouter."}, "From OpenRouter."),
        ({"reasoning_content": {"text": "no"}}, None),
    ],
    ids=["deepseek", "openrouter", "null-then-openrouter", "not-a-string"],
)
async def test_reasoning_is_read_from_the_providers_extra_fields(scripted_llm, make_llm, extra, expected):
    scripted_llm.script(raw(completion({"content": "42", **extra})))

    response = await make_llm().chat(ASK)

    assert response.reasoning_content == expected
    assert response.content == "42"


async def test_fields_we_do_not_read_are_ignored_and_odd_metadata_is_dropped(scripted_llm, make_llm):
    body = completion(
        {"content": "Paris.", "refusal": None, "annotations": [{"type": "url_citation"}], "audio": None},
        model=7,
        service_tier="default",
        system_fingerprint={"odd": True},
    )
    body["choices"][0]["finish_reason"] = ["stop"]
    body["choices"][0]["logprobs"] = {"content": []}
    scripted_llm.script(raw(body))

    response = await make_llm().chat(ASK)

    assert response.content == "Paris."
    assert response.model is None
    assert response.finish_reason is None


async def test_null_token_counts_count_as_zero_and_the_total_is_computed(scripted_llm, make_llm):
    usage = {"prompt_tokens": 8, "completion_tokens": None, "total_tokens": None}
    scripted_llm.script(raw(completion({"content": "Paris."}, usage=usage)))

    response = await make_llm().chat(ASK)

    assert response.usage == Usage(8, 0, 8, calls=1)


async def test_without_usage_the_estimate_counts_the_tool_call_arguments(scripted_llm, make_llm):
    arguments = json.dumps({"q": "a fairly long search query about the capital of France"})
    body = completion({"content": None, "tool_calls": [function_call(arguments=arguments)]})
    del body["usage"]
    scripted_llm.script(raw(body))

    response = await make_llm().chat(ASK)

    assert response.usage.completion_tokens == (len(arguments) + 3) // 4
    assert response.usage.prompt_tokens > 0


# --- shapes that are refused ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "the body is not JSON"),
        (b"[1, 2]", "the completion is not a JSON object"),
        (json.dumps({"choices": []}).encode(), "the completion has no choices"),
        (json.dumps({"choices": None}).encode(), "the completion has no choices"),
        (json.dumps({"choices": {"0": {}}}).encode(), "choices are not a list of objects"),
        (json.dumps({"choices": ["Paris."]}).encode(), "choices are not a list of objects"),
        (json.dumps({"choices": [{"index": 0, "finish_reason": "stop"}]}).encode(), "has no message"),
        (json.dumps({"choices": [{"message": None}]}).encode(), "has no message"),
    ],
    ids=[
        "empty",
        "array",
        "no-choices",
        "null-choices",
        "choices-object",
        "choice-string",
        "no-message",
        "null-message",
    ],
)
async def test_a_completion_without_a_readable_choice_is_malformed(scripted_llm, make_llm, body, reason):
    scripted_llm.script(malformed(body))

    with pytest.raises(LLMError, match=f"malformed response: .*{reason}") as caught:
        await make_llm().chat(ASK)

    assert isinstance(caught.value.__cause__, ValueError)
    assert caught.value.status_code is None


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ({"content": [{"type": "text", "text": "Paris."}]}, "content is not a string"),
        ({"content": 42}, "content is not a string"),
        ({"content": None, "tool_calls": {"id": "call_1"}}, "tool_calls are not a list"),
        ({"content": None, "tool_calls": ["search"]}, "a tool call is not an object"),
        ({"content": None, "tool_calls": [{"id": "c", "type": "function"}]}, "has no function object"),
        ({"content": None, "tool_calls": [{"type": "function", "function": {"name": "f"}}]}, "id is not a"),
        ({"content": None, "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}, "name is not a"),
        ({"content": None, "tool_calls": [function_call(arguments={"q": "x"})]}, "arguments are not a JSON"),
    ],
    ids=[
        "content-parts",
        "content-number",
        "tool-calls-object",
        "tool-call-string",
        "no-function",
        "no-id",
        "no-name",
        "arguments-object",
    ],
)
async def test_a_message_of_the_wrong_shape_is_malformed(scripted_llm, make_llm, message, reason):
    scripted_llm.script(raw(completion(message)))

    with pytest.raises(LLMError, match=f"malformed response: .*{reason}"):
        await make_llm().chat(ASK)


@pytest.mark.parametrize(
    "usage", ["many", {"prompt_tokens": "10", "completion_tokens": 3}], ids=["string", "text-count"]
)
async def test_a_usage_of_the_wrong_shape_is_malformed(scripted_llm, make_llm, usage):
    scripted_llm.script(raw(completion({"content": "Paris."}, usage=usage)))

    with pytest.raises(LLMError, match="malformed response: the usage"):
        await make_llm().chat(ASK)


async def test_a_non_json_body_names_its_start_without_the_api_key(scripted_llm):
    key = "sk-secret-in-a-proxy-page"
    scripted_llm.script(malformed(f"<html>Bad gateway for {key}</html>".encode(), content_type="text/html"))
    llm = OpenAICompatibleLLM(base_url=scripted_llm.base_url, api_key=key, model="m", max_retries=0)

    with pytest.raises(LLMError) as caught:
        await llm.chat(ASK)

    assert "malformed response: the body is not JSON: b'<html>Bad gateway for ***" in str(caught.value)
    assert key not in str(caught.value)


# --- the request ------------------------------------------------------------------------------


async def test_the_request_goes_to_the_endpoint_with_the_api_key_as_json(scripted_llm):
    sent: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        sent.append(request)

    http_client = httpx2.AsyncClient(event_hooks={"request": [record]})
    client = openai.AsyncOpenAI(
        base_url=scripted_llm.base_url, api_key="sk-endpoint", max_retries=0, http_client=http_client
    )
    llm = OpenAICompatibleLLM(base_url=scripted_llm.base_url, api_key="sk-endpoint", model="m", client=client)
    scripted_llm.script(text("Paris."), text("Paris."))
    try:
        await llm.chat(ASK)
        [_ async for _ in llm.stream_chat(ASK)]
    finally:
        await client.close()

    for request in sent:
        assert request.method == "POST"
        assert request.url.path == "/v1/chat/completions"
        assert request.headers["authorization"] == "Bearer sk-endpoint"
        assert request.headers["content-type"] == "application/json"
    assert [json.loads(r.content)["messages"] for r in sent] == [ASK, ASK]


async def test_messages_are_sent_verbatim_including_provider_specific_keys(scripted_llm, make_llm):
    # DeepSeek wants the reasoning of a tool-calling turn sent back; no SDK type knows the key.
    history = [
        *ASK,
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "Look it up.",
            "tool_calls": [function_call(arguments='{"q": "Paris"}')],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris is the capital.", "_tokens": 5},
    ]
    scripted_llm.script(text("Paris."))

    await make_llm().chat(history)

    assert scripted_llm.last_request["messages"] == [
        *history[:2],
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris is the capital."},
    ]


async def test_extra_body_keys_win_over_the_adapters_own_as_the_sdk_merged_them(scripted_llm, make_llm):
    scripted_llm.script(text("ok"), text("ok"))
    llm = make_llm(extra_body={"temperature": 0.0, "stream_options": {"include_usage": False}, "top_k": 20})

    await llm.chat(ASK, temperature=0.7)
    [_ async for _ in llm.stream_chat(ASK, temperature=0.7)]

    plain, streamed = scripted_llm.requests
    assert (plain["temperature"], plain["top_k"], "stream" in plain) == (0.0, 20, False)
    assert (streamed["temperature"], streamed["stream"]) == (0.0, True)
    assert streamed["stream_options"] == {"include_usage": False}


async def test_a_rate_limited_stream_is_retried_by_the_sdk_then_streams(scripted_llm, make_llm):
    scripted_llm.script(error(429, message="Rate limit reached", code="rate_limit_exceeded"), text("Paris."))
    usage = Usage()

    deltas = [d async for d in make_llm(max_retries=1).stream_chat(ASK, usage=usage)]

    assert "".join(deltas) == "Paris."
    assert len(scripted_llm.requests) == 2
    assert usage.calls == 1


async def test_a_stream_that_fails_mid_answer_gives_its_connection_back(scripted_llm, one_connection_llm):
    # One pooled connection, and the server keeps the failed body open: only closing it frees it.
    llm = one_connection_llm
    chunk = {"choices": [{"index": 0, "delta": {"content": "Par"}}]}
    scripted_llm.script(
        event_stream(b"data: " + json.dumps(chunk).encode() + b"\n\n", b"data: {broken\n\n", 30.0),
        text("next"),
    )
    with pytest.raises(LLMError, match="malformed response"):
        [_ async for _ in llm.stream_chat(ASK)]

    response = await llm.chat(ASK)

    assert response.content == "next"
