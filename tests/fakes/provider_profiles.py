"""Provider profiles of the scripted OpenAI-compatible server: what each provider does differently from
OpenAI's Chat Completions API, as its documentation (or its maintainers, in an issue) says.

``server.profile = P`` makes :class:`~tests.fakes.openai_server.ScriptedOpenAIServer` behave as ``P``: it
refuses the requests ``P`` refuses (before any scripted reply is taken) and shapes every reply the way ``P``
sends it (streamed tool-call deltas, usage, ``content`` next to tool calls, reasoning). ``server.quirks``
counts each behaviour exercised, under the names listed in :data:`QUIRKS`.

``abilities`` is what the endpoint really supports (the keys of ``agents.engine.llm.DEFAULT_ABILITIES``), so an
engine built with a profile's abilities never triggers its refusals. Each profile names its sources; a
message marked "as reported" is quoted from an issue that shows the provider's body, not from the docs.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.openai_replies import ErrorReply
from tests.fakes.provider_rules import (
    QUIRKS,
    ProviderError,
    ProviderProfile,
    Request,
    bare_json_tool_calls,
    error_reply,
    hermes_tool_calls,
    refusal_of,
)

# --- the providers ---------------------------------------------------------------------------


_ABILITY_NAMES = (
    "tool_call",
    "parallel_tool_calls",
    "json_mode",
    "forced_tool_choice",
    "stream_only",
    "reasoning_output",
    "reasoning_replay",
    "vision",
)
#: OpenAI's tool calling: parallel calls, JSON mode and a forced tool choice.
_OPENAI_TOOLING = ("tool_call", "parallel_tool_calls", "json_mode", "forced_tool_choice")
_REASONING = ("reasoning_output", "reasoning_replay")


def _supports(*names: str) -> dict[str, bool]:
    """A profile's abilities: the ones named are supported, every other one is not."""
    unknown = set(names) - set(_ABILITY_NAMES)
    if unknown:
        raise ValueError(f"unknown abilities: {sorted(unknown)}")
    return {name: name in names for name in _ABILITY_NAMES}


DEEPSEEK_REASONING_NOT_PASSED_BACK = (
    "The `reasoning_content` in the thinking mode must be passed back to the API."
)

_OPENAI_JSON_WORD = ProviderError(
    400,
    "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
)
_OPENAI_CONTEXT = ProviderError(
    400,
    "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. "
    "Please reduce the length of the messages.",
    "context_length_exceeded",
)
# 429 bodies: the codes as the providers' error pages list them; the text is representative, not quoted (the
# engine reads the status and Retry-After, never the words).
_OPENAI_RATE_LIMIT = ProviderError(
    429,
    "Rate limit reached for gpt-4o in organization org-scripted on requests per min (RPM): Limit 3, Used 3, "
    "Requested 1. Please try again in 1s.",
    "rate_limit_exceeded",
    "requests",
)
_VLLM_CONTEXT = ProviderError(
    400,
    "This model's maximum context length is 16384 tokens. However, you requested 19591 tokens (9591 in the "
    "messages, 10000 in the completion). Please reduce the length of the messages or completion.",
    None,
    "BadRequestError",
)

# OpenAI, Chat Completions (https://platform.openai.com/docs/api-reference/chat/create): the baseline. Streamed
# tool calls: the first delta of a call has its id and name, the following ones its index and argument
# pieces only; with ``stream_options.include_usage`` the usage comes in a last chunk whose ``choices`` is
# empty. JSON mode (https://platform.openai.com/docs/guides/structured-outputs#json-mode) refuses, with a
# 400, messages that never say "json". 429s carry Retry-After (https://platform.openai.com/docs/guides/rate-limits).
OPENAI = ProviderProfile(
    name="openai",
    source="https://platform.openai.com/docs/api-reference/chat/create",
    references=(
        "https://platform.openai.com/docs/guides/structured-outputs#json-mode",
        "https://platform.openai.com/docs/guides/rate-limits",
    ),
    abilities=_supports(*_OPENAI_TOOLING, "vision"),
    json_word_refusal=_OPENAI_JSON_WORD,
    context_length=_OPENAI_CONTEXT,
    rate_limit=_OPENAI_RATE_LIMIT,
)

# Azure OpenAI, REST reference (https://learn.microsoft.com/azure/ai-foundry/openai/reference): requests go to
# /openai/deployments/{deployment}/chat/completions?api-version=..., the key in the ``api-key`` header;
# a request without api-version is refused (400 "The api-version query parameter (?api-version=) is required
# for all requests."), a key in the wrong header with 401 "Access denied due to invalid subscription key or
# wrong API endpoint...". The v1 API (https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle)
# takes /openai/v1/ without api-version. Streams begin with a chunk of ``prompt_filter_results`` and empty
# ``choices`` (content filtering, https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter).
AZURE_OPENAI = ProviderProfile(
    name="azure-openai",
    source="https://learn.microsoft.com/azure/ai-foundry/openai/reference",
    references=(
        "https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle",
        "https://learn.microsoft.com/azure/ai-foundry/openai/concepts/content-filter",
    ),
    abilities=dict(OPENAI.abilities),
    base_path="/openai/deployments/gpt-4o",
    auth_header="api-key",
    auth_refusal=ProviderError(
        401,
        "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key "
        "for an active subscription and use a correct regional API endpoint for your resource.",
        "401",
        "",
    ),
    required_query=("api-version",),
    versionless_path="/openai/v1",
    query_refusal=ProviderError(
        400,
        "The api-version query parameter (?api-version=) is required for all requests.",
        "MissingApiVersionParameter",
        "",
    ),
    json_word_refusal=_OPENAI_JSON_WORD,
    prompt_filter_chunk=True,
    context_length=_OPENAI_CONTEXT,
    rate_limit=ProviderError(
        429,
        "Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have "
        "exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 1 second.",
        "429",
        "",
    ),
)

# DeepSeek, thinking mode (https://api-docs.deepseek.com/guides/thinking_mode): reasoning_content streamed
# before the content; a tool-calling turn's reasoning_content must come back in every later request, else
# 400. JSON Output (https://api-docs.deepseek.com/guides/json_mode): the system or user prompt must contain
# "json". Context-length errors use OpenAI's wording (https://api-docs.deepseek.com/quick_start/error_codes).
DEEPSEEK = ProviderProfile(
    name="deepseek",
    source="https://api-docs.deepseek.com/guides/thinking_mode",
    references=(
        "https://api-docs.deepseek.com/guides/json_mode",
        "https://api-docs.deepseek.com/guides/function_calling",
        "https://api-docs.deepseek.com/quick_start/error_codes",
    ),
    abilities=_supports(*_OPENAI_TOOLING, *_REASONING),
    reasoning="The user wants figures; a tool call will give them.",
    reasoning_back_required=True,
    refusal=DEEPSEEK_REASONING_NOT_PASSED_BACK,
    json_word_refusal=_OPENAI_JSON_WORD,  # the rule is documented, its 400's wording is not: OpenAI's
    context_length=ProviderError(
        400,
        "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens (140000 in "
        "the messages, 0 in the completion). Please reduce the length of the messages or completion.",
        "invalid_request_error",
    ),
    rate_limit=ProviderError(429, "Rate Limit Reached", "rate_limit_reached"),
)

#: The earlier name of :data:`DEEPSEEK` (issue #16's first part).
DEEPSEEK_THINKING = ProviderProfile(
    name="deepseek-thinking",
    source=DEEPSEEK.source,
    abilities=DEEPSEEK.abilities,
    reasoning=DEEPSEEK.reasoning,
    reasoning_back_required=True,
    refusal=DEEPSEEK_REASONING_NOT_PASSED_BACK,
)

# Qwen on DashScope / Model Studio, OpenAI-compatible mode (https://help.aliyun.com/zh/model-studio/deep-thinking,
# https://www.alibabacloud.com/help/en/model-studio/deep-thinking): ``enable_thinking`` switches thinking; the
# reasoning comes in reasoning_content, streamed before the content; thinking mode "only supports incremental
# output": QwQ and the open-source Qwen3 in thinking mode answer a non-streamed request with 400 "This model only
# support stream mode, please enable the stream parameter to access the model." (as reported in
# github.com/FoundationAgents/OpenManus/issues/330); ``stream_options.include_usage`` puts the usage in the last
# packet. Function calling (https://help.aliyun.com/zh/model-studio/qwen-function-calling): several calls only
# with ``parallel_tool_calls: true`` (off by default). JSON mode needs "json" in the prompt and is refused in
# thinking mode (https://help.aliyun.com/zh/model-studio/json-mode). A prompt too long: 400 "<400>
# InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]" (as reported in
# github.com/QwenLM/qwen-code/issues/98).
QWEN_DASHSCOPE = ProviderProfile(
    name="qwen-dashscope",
    source="https://help.aliyun.com/zh/model-studio/deep-thinking",
    references=(
        "https://www.alibabacloud.com/help/en/model-studio/deep-thinking",
        "https://help.aliyun.com/zh/model-studio/qwen-function-calling",
        "https://help.aliyun.com/zh/model-studio/json-mode",
        "https://github.com/FoundationAgents/OpenManus/issues/330",
    ),
    abilities=_supports("tool_call", "forced_tool_choice", "stream_only", *_REASONING),
    base_path="/compatible-mode/v1",
    reasoning="Let me think about which figures are needed.",
    stream_only=ProviderError(
        400,
        "This model only support stream mode, please enable the stream parameter to access the model. ",
        "invalid_parameter_error",
    ),
    json_mode_refusal=ProviderError(
        400, "Json mode response is not supported when enable_thinking is true", "invalid_parameter_error"
    ),
    parallel="on_request",
    context_length=ProviderError(
        400,
        "<400> InternalError.Algo.InvalidParameter: Range of input length should be [1, 30720]",
        "invalid_parameter_error",
    ),
    rate_limit=ProviderError(
        429, "Requests rate limit exceeded, please try again later.", "limit_requests", "limit_requests"
    ),
)

# GLM on Zhipu / Z.AI, chat completions (https://docs.bigmodel.cn/api-reference/模型-api/对话补全): ``tool_choice``
# takes only "auto" (400 "Tool choice must be auto", as reported in github.com/vectorize-io/hindsight/issues/4246);
# a streamed tool call comes whole in one delta (with its id, index and the complete arguments, as shown in
# langchain-ai/langchain#26693); the usage comes with the last chunk. GLM-4.5 and later return reasoning_content
# (https://docs.bigmodel.cn/cn/guide/capabilities/thinking-mode). A prompt too long: error 1261 "Prompt exceeds
# max length" (github.com/NousResearch/hermes-agent/pull/1877).
GLM_ZHIPU = ProviderProfile(
    name="glm-zhipu",
    source="https://docs.bigmodel.cn/api-reference/模型-api/对话补全",
    references=(
        "https://docs.bigmodel.cn/cn/guide/capabilities/thinking-mode",
        "https://github.com/vectorize-io/hindsight/issues/4246",
        "https://github.com/langchain-ai/langchain/pull/26693",
    ),
    abilities=_supports("tool_call", "parallel_tool_calls", "json_mode", *_REASONING),
    base_path="/api/paas/v4",
    reasoning="I will look the figures up first.",
    refused_tool_choices=frozenset({"required", "named"}),
    tool_choice_refusal=ProviderError(400, "Tool choice must be auto", "400"),
    tool_arguments_whole=True,
    usage="last_chunk",
    context_length=ProviderError(400, "Prompt exceeds max length", "1261"),
    rate_limit=ProviderError(429, "您当前使用该API的并发数过高，请降低并发，或联系客服增加限额。", "1302"),
)

# Kimi on Moonshot, chat API (https://platform.kimi.ai/docs/api/chat) and tool use
# (https://platform.kimi.ai/docs/api/tool-use): ``tool_choice`` "required" is not supported, and the thinking
# models refuse a named one ("tool_choice 'specified' is incompatible with thinking enabled", as reported in
# github.com/UKGovernmentBEIS/inspect_ai/pull/5152); kimi-k2 thinking models (thinking on by default,
# https://platform.moonshot.cn/docs/guide/use-kimi-k2-thinking-model) stream reasoning_content first and need
# it back with the tool calls. Streams: tool-call deltas without index and the usage inside choices[0] of the
# last chunk (github.com/vercel/ai/pull/19727, github.com/earendil-works/pi/issues/2017). Too long: 400
# "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)" (MoonshotAI/kimi-cli#2011).
KIMI_MOONSHOT = ProviderProfile(
    name="kimi-moonshot",
    source="https://platform.kimi.ai/docs/api/chat",
    references=(
        "https://platform.kimi.ai/docs/api/tool-use",
        "https://platform.moonshot.cn/docs/guide/use-kimi-k2-thinking-model",
        "https://github.com/vercel/ai/pull/19727",
        "https://github.com/MoonshotAI/kimi-cli/issues/2011",
    ),
    abilities=_supports("tool_call", "parallel_tool_calls", "json_mode", "vision", *_REASONING),
    reasoning="The figures need two look-ups.",
    reasoning_back_required=True,
    refusal="thinking is enabled but reasoning_content is missing in assistant tool call message at index 1",
    refused_tool_choices=frozenset({"required", "named"}),
    tool_choice_refusal=ProviderError(400, "tool_choice 'specified' is incompatible with thinking enabled"),
    tool_index="absent",
    usage="in_choice",
    context_length=ProviderError(
        400, "Invalid request: Your request exceeded model token limit: 262144 (requested: 269030)"
    ),
    rate_limit=ProviderError(
        429,
        "Your account org-scripted request reached organization max RPM: 3, please try again after 1 seconds",
        None,
        "rate_limit_reached_error",
    ),
)

# Doubao on Volcengine Ark (https://www.volcengine.com/docs/82379/1494384, chat API; base URL
# https://ark.cn-beijing.volces.com/api/v3): models listed with ``structured_outputs.json_object: false`` refuse
# JSON mode with 400 "The parameter `response_format.type` specified in the request are not valid: `json_object`
# is not supported by this model" (as reported in github.com/Usagi-org/ai-goofish-monitor/issues/272); the
# deep-thinking models return reasoning_content (https://www.volcengine.com/docs/82379/1449737). A ``max_tokens``
# above the model's limit: 400 "The parameter `max_tokens` specified in the request are not valid: integer above
# maximum value, expected a value <= 12288, but got 16384 instead." (as reported in langgenius/dify#13451,
# xuanyustudio/LocalMiniDrama#39).
DOUBAO_ARK = ProviderProfile(
    name="doubao-ark",
    source="https://www.volcengine.com/docs/82379/1494384",
    references=(
        "https://www.volcengine.com/docs/82379/1449737",
        "https://github.com/Usagi-org/ai-goofish-monitor/issues/272",
    ),
    abilities=_supports("tool_call", "parallel_tool_calls", "forced_tool_choice", "vision", *_REASONING),
    base_path="/api/v3",
    reasoning="Two look-ups are needed.",
    max_output_tokens=12288,
    max_tokens_refusal=ProviderError(
        400,
        "The parameter `max_tokens` specified in the request are not valid: integer above maximum value, "
        "expected a value <= 12288, but got 16384 instead.",
        "InvalidParameter",
        "BadRequest",
    ),
    json_mode_refusal=ProviderError(
        400,
        "The parameter `response_format.type` specified in the request are not valid: `json_object` is not "
        "supported by this model.",
        "InvalidParameter",
    ),
    rate_limit=ProviderError(
        429,
        "The request has exceeded the rate limit (RPM) of the endpoint. Please try again later.",
        "RateLimitExceeded.EndpointRPMExceeded",
    ),
)

# vLLM with ``--enable-auto-tool-choice --tool-call-parser ...`` (https://docs.vllm.ai/en/latest/features/tool_calling/):
# auto, required and named tool_choice; streamed deltas as OpenAI's; content "" next to tool calls; too long:
# "This model's maximum context length is N tokens. However, you requested M tokens ..." (vllm-project/vllm#20409).
VLLM = ProviderProfile(
    name="vllm",
    source="https://docs.vllm.ai/en/latest/features/tool_calling/",
    references=("https://github.com/vllm-project/vllm/issues/20409",),
    abilities=_supports(*_OPENAI_TOOLING, "reasoning_replay"),
    content_with_tool_calls="empty",
    context_length=_VLLM_CONTEXT,
)

# vLLM started without a tool parser (same page): tool_choice "auto" is refused with 400 '"auto" tool choice
# requires --enable-auto-tool-choice and --tool-call-parser to be set'; with tools and no tool_choice the tool
# definitions still reach the chat template and the model writes its call as text in content (Hermes
# ``<tool_call>{...}</tool_call>``), nobody parsing it. JSON mode works (structured outputs).
VLLM_NO_TOOL_PARSER = ProviderProfile(
    name="vllm-no-tool-parser",
    source="https://docs.vllm.ai/en/latest/features/tool_calling/",
    references=("https://github.com/soapbucket/sbproxy/pull/591",),
    abilities={
        **VLLM.abilities,
        "tool_call": False,
        "parallel_tool_calls": False,
        "forced_tool_choice": False,
    },
    auto_tool_choice_refusal=ProviderError(
        400,
        '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        None,
        "BadRequestError",
    ),
    tool_calls_as_text="hermes",
    context_length=_VLLM_CONTEXT,
)

# SGLang (https://docs.sglang.ai/advanced_features/tool_parser.html): tool calls with ``--tool-call-parser``;
# reasoning with ``--reasoning-parser`` in reasoning_content (https://docs.sglang.ai/advanced_features/separate_reasoning.html);
# too long: 400 "The input (N tokens) is longer than the model's context length (M tokens)." (QwenLM/Qwen3#1321).
SGLANG = ProviderProfile(
    name="sglang",
    source="https://docs.sglang.ai/advanced_features/tool_parser.html",
    references=(
        "https://docs.sglang.ai/advanced_features/separate_reasoning.html",
        "https://github.com/QwenLM/Qwen3/issues/1321",
    ),
    abilities=_supports(*_OPENAI_TOOLING, *_REASONING),
    reasoning="Two tools will answer this.",
    content_with_tool_calls="empty",
    context_length=ProviderError(
        400,
        "The input (61709 tokens) is longer than the model's context length (40960 tokens).",
        None,
        "BadRequestError",
    ),
)

# Ollama, OpenAI compatibility (https://docs.ollama.com/api/openai-compatibility): ``tool_choice`` is not among
# the supported fields (ignored); thinking models return ``reasoning``. Streamed tool calls come whole in one
# chunk, every one with index 0 (ollama/ollama#15457, #15497), and the stream may end with finish_reason "stop"
# although it carried tool calls (ollama/ollama#7963, BerriAI/litellm#35663). A prompt longer than ``num_ctx``
# is truncated, not refused: no context-length error to map.
OLLAMA = ProviderProfile(
    name="ollama",
    source="https://docs.ollama.com/api/openai-compatibility",
    references=(
        "https://github.com/ollama/ollama/issues/15457",
        "https://github.com/ollama/ollama/pull/7963",
        "https://github.com/BerriAI/litellm/issues/35663",
    ),
    abilities=_supports("tool_call", "parallel_tool_calls", "json_mode", "vision", *_REASONING),
    reasoning="Both look-ups at once.",
    reasoning_field="reasoning",
    tool_index="zero",
    tool_arguments_whole=True,
    finish_with_tool_calls="stop",
)

#: One profile per provider, as the contract of issue #16 names them.
PROFILES: tuple[ProviderProfile, ...] = (
    OPENAI,
    AZURE_OPENAI,
    DEEPSEEK,
    QWEN_DASHSCOPE,
    GLM_ZHIPU,
    KIMI_MOONSHOT,
    DOUBAO_ARK,
    VLLM,
    VLLM_NO_TOOL_PARSER,
    SGLANG,
    OLLAMA,
)


#: Azure OpenAI deployments of older models refuse the ``parallel_tool_calls`` field: 400 "Unrecognized request
#: argument supplied: parallel_tool_calls" (as reported in github.com/Azure/azure-sdk-for-net/issues/45719).
AZURE_PARALLEL_FIELD_REFUSAL = ProviderError(
    400, "Unrecognized request argument supplied: parallel_tool_calls", None, "invalid_request_error"
)


# --- helpers for tests ------------------------------------------------------------------------


def rate_limited(profile: ProviderProfile, *, retry_after: str = "1") -> ErrorReply:
    """The profile's 429, asking to wait ``retry_after`` seconds (``Retry-After``, which the SDK honours)."""
    limit = profile.rate_limit or _OPENAI_RATE_LIMIT
    return error_reply(limit, {"Retry-After": retry_after})


def context_overflow(profile: ProviderProfile) -> ErrorReply:
    """The profile's refusal of a prompt longer than the model's context window."""
    if profile.context_length is None:
        raise ValueError(f"{profile.name} documents no context-length error")
    return error_reply(profile.context_length)


AZURE_API_VERSION = "2024-10-21"


def llm_settings(profile: ProviderProfile) -> dict[str, Any]:
    """The ``OpenAICompatibleLLM`` keyword arguments an admin sets for ``profile``'s endpoint: its abilities,
    and Azure's key header and api-version."""
    settings: dict[str, Any] = {"abilities": dict(profile.abilities)}
    if profile.auth_header:
        settings["api_key_header"] = profile.auth_header
    if profile.required_query:
        settings["default_query"] = {name: AZURE_API_VERSION for name in profile.required_query}
    return settings


def profile_named(name: str) -> ProviderProfile:
    """The profile called ``name`` (raises ``KeyError``)."""
    for profile in PROFILES:
        if profile.name == name:
            return profile
    raise KeyError(name)


__all__ = [
    "AZURE_OPENAI",
    "AZURE_PARALLEL_FIELD_REFUSAL",
    "DEEPSEEK",
    "DEEPSEEK_REASONING_NOT_PASSED_BACK",
    "DEEPSEEK_THINKING",
    "DOUBAO_ARK",
    "GLM_ZHIPU",
    "KIMI_MOONSHOT",
    "OLLAMA",
    "OPENAI",
    "PROFILES",
    "QUIRKS",
    "QWEN_DASHSCOPE",
    "SGLANG",
    "VLLM",
    "VLLM_NO_TOOL_PARSER",
    "ProviderError",
    "ProviderProfile",
    "Request",
    "context_overflow",
    "error_reply",
    "bare_json_tool_calls",
    "hermes_tool_calls",
    "llm_settings",
    "profile_named",
    "rate_limited",
    "refusal_of",
]
