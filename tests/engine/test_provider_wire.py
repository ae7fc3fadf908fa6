"""Each provider's wire-format quirks, as the scripted server's profiles reproduce them, handled by
``OpenAICompatibleLLM`` through the real ``openai`` SDK: streamed-only endpoints, the shapes of streamed tool
calls and usage, Azure's key header and api-version, extra headers, output limits, 429s and context-length
errors in each provider's words, and the errors that name a wrong setting."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from agents.engine.completion import Usage
from agents.engine.llm import (
    ContextLengthExceededError,
    EndpointMisconfiguredError,
    LLMError,
    OpenAICompatibleLLM,
    RateLimitedError,
)
from tests.fakes.llm_fixtures import SCRIPTED_API_KEY
from tests.fakes.openai_server import call, error, text, tool_calls
from tests.fakes.provider_profiles import (
    AZURE_OPENAI,
    DOUBAO_ARK,
    GLM_ZHIPU,
    KIMI_MOONSHOT,
    OLLAMA,
    OPENAI,
    PROFILES,
    QWEN_DASHSCOPE,
    VLLM,
    VLLM_NO_TOOL_PARSER,
    ProviderError,
    context_overflow,
    error_reply,
    rate_limited,
)

ASK = [{"role": "user", "content": "ACME's orders and invoices?"}]
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("orders", "invoices")
]
PAIR = tool_calls(
    call("orders", {"q": "acme", "note": "a long enough query to split"}, id="c1"),
    call("invoices", {"q": "acme", "year": 2024}, id="c2"),
)
USAGE = {"prompt_tokens": 70, "completion_tokens": 7}


# --- streamed-only endpoints: chat() assembles the reply from the stream ------------------------------


STREAM_SHAPES = [
    (OPENAI, {"tool_id_first_only", "usage_empty_choices_chunk"}),
    (AZURE_OPENAI, {"prompt_filter_chunk", "tool_id_first_only", "usage_empty_choices_chunk"}),
    (KIMI_MOONSHOT, {"tool_delta_without_index", "tool_id_first_only", "usage_in_choice"}),
    (GLM_ZHIPU, {"tool_arguments_whole", "usage_in_last_chunk"}),
    (OLLAMA, {"tool_delta_index_reused", "tool_arguments_whole", "finish_stop_with_tool_calls"}),
]


@pytest.mark.parametrize(("profile", "quirks"), STREAM_SHAPES, ids=lambda p: getattr(p, "name", ""))
async def test_a_streamed_reply_assembles_to_the_scripted_tool_calls_and_usage_whatever_the_shape(
    scripted_llm, make_profile_llm, profile, quirks
):
    llm = make_profile_llm(profile, abilities={"stream_only": True})
    scripted_llm.script(tool_calls(*PAIR.calls, usage=USAGE))

    response = await llm.chat(ASK, tools=TOOLS)

    assert [(c.id, c.name, json.loads(c.arguments)) for c in response.tool_calls] == [
        ("c1", "orders", {"q": "acme", "note": "a long enough query to split"}),
        ("c2", "invoices", {"q": "acme", "year": 2024}),
    ]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (70, 7)
    assert scripted_llm.last_request["stream"] is True
    assert {q for q in quirks if scripted_llm.quirks[q]} == quirks


async def test_dashscope_stream_only_model_answers_with_its_reasoning_and_content(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(QWEN_DASHSCOPE)
    scripted_llm.script(text("ACME has 3 orders.", usage=USAGE))

    response = await llm.chat(ASK)

    assert response.content == "ACME has 3 orders."
    assert response.reasoning_content == QWEN_DASHSCOPE.reasoning
    assert response.usage.total_tokens == 77
    assert scripted_llm.quirks["stream_only_refused"] == 0
    assert scripted_llm.quirks["usage_empty_choices_chunk"] == 1


async def test_a_stream_only_model_called_without_streaming_names_the_setting_to_switch_on(make_profile_llm):
    llm = make_profile_llm(QWEN_DASHSCOPE, abilities={"stream_only": False})

    with pytest.raises(EndpointMisconfiguredError, match="switch on 'answers streamed requests only'"):
        await llm.chat(ASK)


async def test_a_model_that_refuses_streaming_names_the_setting_to_switch_off(scripted_llm, make_profile_llm):
    llm = make_profile_llm(OPENAI, abilities={"stream_only": True})
    scripted_llm.script(
        error(
            400,
            message="Unsupported value: 'stream' does not support true with this model.",
            code="unsupported_value",
        )
    )

    with pytest.raises(EndpointMisconfiguredError, match="switch off 'answers streamed requests only'"):
        await llm.chat(ASK)


async def test_an_ollama_reasoning_field_comes_back_under_its_own_name(scripted_llm, make_profile_llm):
    llm = make_profile_llm(OLLAMA, abilities={"stream_only": True})
    scripted_llm.script(tool_calls(call("orders", {"q": "acme"}, id="c1")))

    response = await llm.chat(ASK, tools=TOOLS)

    assert response.reasoning_fields == {"reasoning": OLLAMA.reasoning}
    assert response.assistant_message()["reasoning"] == OLLAMA.reasoning
    assert response.finish_reason == "stop" and len(response.tool_calls) == 1


async def test_an_unreported_stream_usage_is_estimated(scripted_llm, make_profile_llm):
    llm = make_profile_llm(OPENAI, abilities={"stream_only": True})
    scripted_llm.script(text("word " * 40, omit_usage=True))

    response = await llm.chat(ASK)

    assert response.usage.calls == 1 and response.usage.completion_tokens >= 40


@pytest.mark.parametrize("stream_only", [False, True], ids=["plain", "streamed"])
async def test_a_provider_that_reports_no_usage_gets_an_estimate(scripted_llm, make_profile_llm, stream_only):
    llm = make_profile_llm(replace(OPENAI, usage="absent"), abilities={"stream_only": stream_only})
    scripted_llm.script(text("word " * 40))

    response = await llm.chat(ASK)

    assert response.usage.calls == 1 and response.usage.completion_tokens >= 40
    assert scripted_llm.quirks["usage_absent"] == 1


async def test_a_kimi_stream_answer_reports_the_usage_it_put_inside_the_choice(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(KIMI_MOONSHOT)
    scripted_llm.script(text("ACME has 3 orders.", usage=USAGE))
    usage = Usage()

    answer = "".join([d async for d in llm.stream_chat(ASK, usage=usage)])

    assert answer == "ACME has 3 orders."
    assert (usage.prompt_tokens, usage.completion_tokens) == (70, 7)
    assert scripted_llm.quirks["usage_in_choice"] == 1


async def test_content_next_to_tool_calls_may_be_empty_or_null(scripted_llm, make_profile_llm):
    llm = make_profile_llm(VLLM)
    scripted_llm.script(PAIR)

    response = await llm.chat(ASK, tools=TOOLS)

    assert response.content == "" and len(response.tool_calls) == 2
    assert response.assistant_message()["content"] == ""
    assert scripted_llm.quirks["content_empty_with_tool_calls"] == 1


# --- Azure OpenAI: the key header and the api-version ------------------------------------------------


async def test_azure_gets_the_key_in_api_key_and_the_api_version_in_the_query(scripted_llm, make_profile_llm):
    llm = make_profile_llm(AZURE_OPENAI)
    scripted_llm.script(text("ok"))

    await llm.chat(ASK)

    (headers,) = scripted_llm.headers
    assert headers["api-key"] == SCRIPTED_API_KEY
    assert "authorization" not in headers  # the key goes nowhere else
    assert scripted_llm.quirks["auth_header_refused"] == scripted_llm.quirks["query_refused"] == 0


async def test_azure_refusing_a_bearer_key_names_the_provider_setting_without_the_key(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(AZURE_OPENAI, api_key_header=None)

    with pytest.raises(
        EndpointMisconfiguredError, match="set the endpoint's provider to Azure OpenAI"
    ) as refused:
        await llm.chat(ASK)

    assert refused.value.status_code == 401
    assert SCRIPTED_API_KEY not in str(refused.value)
    assert scripted_llm.quirks["auth_header_refused"] == 1


async def test_azure_without_api_version_names_the_api_version_setting(scripted_llm, make_profile_llm):
    llm = make_profile_llm(AZURE_OPENAI, default_query=None)

    with pytest.raises(EndpointMisconfiguredError, match="set the endpoint's 'API version'"):
        await llm.chat(ASK)

    assert scripted_llm.quirks["query_refused"] == 1


async def test_azure_v1_base_url_needs_no_api_version(scripted_llm, make_profile_llm):
    make_profile_llm(AZURE_OPENAI)
    llm = OpenAICompatibleLLM(
        base_url=f"{scripted_llm.address}/openai/v1",
        api_key="k-azure",
        model="gpt-4o",
        api_key_header="api-key",
    )
    scripted_llm.script(text("ok"))

    assert (await llm.chat(ASK)).content == "ok"
    assert scripted_llm.quirks["query_refused"] == 0


# --- headers, output limit ------------------------------------------------------------------------------


async def test_extra_headers_go_on_every_request_and_never_into_an_error(scripted_llm, make_llm):
    llm = make_llm(default_headers={"X-Gateway-Token": "gw-secret-123"}, max_output_tokens=512)
    scripted_llm.script(text("ok"), error(400, message="bad header gw-secret-123"))

    await llm.chat(ASK)
    with pytest.raises(LLMError) as failed:
        await llm.chat(ASK)

    assert [h["x-gateway-token"] for h in scripted_llm.headers] == ["gw-secret-123"] * 2
    assert [r["max_tokens"] for r in scripted_llm.requests] == [512, 512]
    assert "gw-secret-123" not in str(failed.value)


async def test_without_an_output_limit_no_max_tokens_is_sent(scripted_llm, make_llm):
    scripted_llm.script(text("ok"))

    await make_llm().chat(ASK)

    assert "max_tokens" not in scripted_llm.last_request


# --- 429 -------------------------------------------------------------------------------------------------


async def test_a_429_surfaces_as_rate_limited_with_the_wait_the_endpoint_asked_for(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(QWEN_DASHSCOPE)
    scripted_llm.script(rate_limited(QWEN_DASHSCOPE, retry_after="7"))

    with pytest.raises(RateLimitedError, match="asked to wait 7 s") as limited:
        await llm.chat(ASK)

    assert limited.value.retry_after == 7.0 and limited.value.status_code == 429
    assert scripted_llm.quirks["rate_limited"] == 1


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
async def test_every_providers_429_is_retried_after_the_wait_it_asks(scripted_llm, make_profile_llm, profile):
    llm = make_profile_llm(profile, max_retries=1)
    scripted_llm.script(rate_limited(profile, retry_after="0.01"), text("ok"))

    assert (await llm.chat(ASK)).content == "ok"
    assert len(scripted_llm.requests) == 2 and scripted_llm.quirks["rate_limited"] == 1


async def test_the_client_retries_a_short_retry_after_then_succeeds(scripted_llm, make_profile_llm):
    llm = make_profile_llm(OPENAI, max_retries=2)
    scripted_llm.script(rate_limited(OPENAI, retry_after="0.05"), text("ok"))

    assert (await llm.chat(ASK)).content == "ok"
    assert len(scripted_llm.requests) == 2


async def test_a_long_retry_after_is_not_waited_for(scripted_llm, make_profile_llm):
    llm = make_profile_llm(OPENAI, max_retries=2)
    scripted_llm.script(rate_limited(OPENAI, retry_after="30"), text("never taken"))
    started = time.monotonic()

    with pytest.raises(RateLimitedError) as limited:
        await llm.chat(ASK)

    assert time.monotonic() - started < 5
    assert len(scripted_llm.requests) == 1 and limited.value.retry_after == 30.0


async def test_a_429_without_retry_after_says_no_wait_was_given(scripted_llm, make_llm):
    scripted_llm.script(error(429, message="slow down", headers={"retry-after-ms": ""}))

    with pytest.raises(RateLimitedError, match="no time given") as limited:
        await make_llm().chat(ASK)

    assert limited.value.retry_after is None


# --- context length, in each provider's words ------------------------------------------------------------


@pytest.mark.parametrize(
    "profile", [p for p in PROFILES if p.context_length is not None], ids=lambda p: p.name
)
async def test_each_providers_context_length_error_is_recognised(scripted_llm, make_profile_llm, profile):
    llm = make_profile_llm(profile)
    scripted_llm.script(context_overflow(profile))

    with pytest.raises(ContextLengthExceededError) as refused:
        await llm.chat(ASK)

    assert refused.value.status_code == profile.context_length.status
    assert scripted_llm.quirks["context_length"] == 1


def test_every_provider_but_ollama_documents_a_context_length_error():
    assert [p.name for p in PROFILES if p.context_length is None] == ["doubao-ark", "ollama"]


# --- errors that name the setting to change ---------------------------------------------------------------


async def test_vllm_without_a_tool_parser_names_the_function_calling_setting(scripted_llm, make_profile_llm):
    llm = make_profile_llm(VLLM_NO_TOOL_PARSER)

    with pytest.raises(EndpointMisconfiguredError, match="switch off 'supports function calling'") as refused:
        await llm.chat(ASK, tools=TOOLS, tool_choice="auto")

    assert "--tool-call-parser" in str(refused.value)
    assert scripted_llm.quirks["auto_tool_choice_refused"] == 1


async def test_an_output_limit_above_the_models_names_the_output_limit_setting(
    scripted_llm, make_profile_llm
):
    llm = make_profile_llm(DOUBAO_ARK, max_output_tokens=16384)

    with pytest.raises(EndpointMisconfiguredError, match="lower the endpoint's 'output limit \\(tokens\\)'"):
        await llm.chat(ASK)

    assert scripted_llm.quirks["max_tokens_refused"] == 1


async def test_an_output_limit_over_the_context_left_stays_a_context_length_error(scripted_llm, make_llm):
    message = (
        "'max_tokens' or 'max_completion_tokens' is too large: 10000. This model's maximum context length is "
        "16384 tokens and your request has 9591 input tokens (10000 > 16384 - 9591)."
    )
    scripted_llm.script(error(400, message=message))

    with pytest.raises(ContextLengthExceededError):
        await make_llm(max_output_tokens=10000).chat(ASK)


async def test_an_ollama_model_without_tools_names_the_function_calling_setting(scripted_llm, make_llm):
    no_tools = ProviderError(
        400, "registry.ollama.ai/library/qwen:4b does not support tools", None, "api_error"
    )
    scripted_llm.script(error_reply(no_tools))

    with pytest.raises(EndpointMisconfiguredError, match="does not support tools: switch off"):
        await make_llm().chat(ASK, tools=TOOLS)
