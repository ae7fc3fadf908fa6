"""Endpoint presets: what each provider's OpenAI-compatible endpoint takes, to fill an endpoint's form.

A preset gives the base URL pattern (``{placeholders}`` the admin replaces), the abilities (the keys of
:data:`ABILITY_KEYS`, the ModelConfig fields of the same names), and per model family the context window
and the output limit, plus the API version and the key header (Azure). Presets only fill the form:
every value stays editable, and "Check endpoint" (``agents.endpoint_check``) tells what the endpoint
really does.

Each number and ability carries its source. Where the source read in this round did not state it, the
comment says "not verified" and the value is the conservative one (an ability off: the engine then does
without it; an output limit empty: the provider's default).

A provider's ``embedding_families`` (:mod:`agents.embedding_presets`) are its embedding models, for an
endpoint of role "embedding" (knowledge bases turn passages into vectors with it; it never chats): kept
apart from the chat ``families`` so that the form offers each only for its role, with the vectors' length
instead of a context window. Its ``rerank_families`` (:mod:`agents.rerank_presets`) are its rerank models, for
an endpoint of role "rerank" (knowledge-base searches reorder their passages with it), with where its
rerank API lives when not at the chat API's address (``rerank_base_url``) and the path it is posted to
(``rerank_path``). Jina AI and Cohere are presets for reranking only: they offer no chat family, and an
endpoint of theirs cannot chat (:func:`chat_provider_problem`).

``max_output_tokens`` is sent as ``max_tokens`` on every call. It stays empty for OpenAI's reasoning
models (o-series, GPT-5), which refuse ``max_tokens`` ("Use 'max_completion_tokens' instead",
https://platform.openai.com/docs/guides/reasoning), and for self-hosted servers, which refuse a
``max_tokens`` that does not fit next to the prompt in the served context length.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents.embedding_presets import (
    DASHSCOPE_EMBEDDINGS,
    DOUBAO_EMBEDDINGS,
    OLLAMA_EMBEDDINGS,
    OPENAI_EMBEDDINGS,
    VLLM_EMBEDDINGS,
    ZHIPU_EMBEDDINGS,
    EmbeddingFamily,
)
from agents.rerank_presets import (
    COHERE_RERANKERS,
    DASHSCOPE_RERANKERS,
    JINA_RERANKERS,
    VLLM_RERANKERS,
    RerankFamily,
)

ABILITY_KEYS: tuple[str, ...] = (
    "tool_call",
    "parallel_tool_calls",
    "forced_tool_choice",
    "json_mode",
    "stream_only",
    "reasoning_output",
    "reasoning_replay",
    "vision",
)
"""The ability keys of the engine's LLM (``agents.engine.llm``) and of ModelConfig's fields."""

# What an endpoint nobody described gets: the engine's defaults (reasoning_replay None = by host).
BASE_ABILITIES: Mapping[str, bool | None] = MappingProxyType(
    {
        "tool_call": True,
        "parallel_tool_calls": True,
        "forced_tool_choice": True,
        "json_mode": True,
        "stream_only": False,
        "reasoning_output": False,
        "reasoning_replay": None,
        "vision": False,
    }
)


@dataclass(frozen=True)
class ModelFamily:
    """Models of one provider that share limits and abilities (``abilities`` overrides the provider's)."""

    key: str
    label: str | Promise
    model: str  # the model name the preset fills in (the family's current model)
    context_window: int
    max_output_tokens: int | None
    source: str
    abilities: Mapping[str, bool | None] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderPreset:
    """One provider's endpoint: base URL pattern, abilities, families, and how the key is sent."""

    provider: str
    label: str | Promise
    base_url: str
    source: str
    key_help: str | Promise
    families: tuple[ModelFamily, ...]
    abilities: Mapping[str, bool | None] = field(default_factory=dict)
    api_version: str = ""
    api_key_header: str | None = None  # None: "Authorization: Bearer <key>"
    headers: Mapping[str, str] = field(default_factory=dict)  # header names to fill, with example values
    embedding_families: tuple[EmbeddingFamily, ...] = ()
    rerank_families: tuple[RerankFamily, ...] = ()
    rerank_base_url: str = ""  # where the rerank API lives when not at ``base_url``
    rerank_path: str = "/rerank"  # posted to under the endpoint's base URL

    def family(self, key: str | None) -> ModelFamily | None:
        """The family called ``key``, else None."""
        return next((f for f in self.families if f.key == key), None)

    def embedding_family(self, key: str | None) -> EmbeddingFamily | None:
        """The embedding family called ``key``, else None."""
        return next((f for f in self.embedding_families if f.key == key), None)

    def rerank_family(self, key: str | None) -> RerankFamily | None:
        """The rerank family called ``key``, else None."""
        return next((f for f in self.rerank_families if f.key == key), None)

    def abilities_for(self, family: str | None = None) -> dict[str, bool | None]:
        """Every ability key: the base, this provider's, then the family's."""
        chosen = self.family(family)
        return {**BASE_ABILITIES, **self.abilities, **(chosen.abilities if chosen else {})}


def _served_model(key: str, label: str | Promise, context_window: int, source: str) -> ModelFamily:
    """The one family of a self-hosted server: whatever model it serves (the model name left to fill in),
    with the provider's default output limit."""
    return ModelFamily(key, label, "", context_window, None, source)


def _self_hosted(
    provider: str,
    label: str | Promise,
    *,
    port: int,
    source: str,
    key_help: str | Promise,
    family: ModelFamily,
    abilities: Mapping[str, bool | None] | None = None,
    embedding_families: tuple[EmbeddingFamily, ...] = (),
    rerank_families: tuple[RerankFamily, ...] = (),
) -> ProviderPreset:
    """A self-hosted OpenAI-compatible server on its default ``port`` of a host the admin names."""
    return ProviderPreset(
        provider=provider,
        label=label,
        base_url=f"http://{{host}}:{port}/v1",
        source=source,
        key_help=key_help,
        families=(family,),
        abilities=abilities or {},
        embedding_families=embedding_families,
        rerank_families=rerank_families,
    )


_OPENAI_FAMILIES = (
    # https://platform.openai.com/docs/models/gpt-4.1 : 1,047,576 context, 32,768 max output tokens.
    ModelFamily(
        "gpt-4.1",
        "GPT-4.1",
        "gpt-4.1",
        1_047_576,
        32_768,
        "https://platform.openai.com/docs/models/gpt-4.1",
        {"vision": True},
    ),
    # https://platform.openai.com/docs/models/gpt-4o : 128,000 context, 16,384 max output tokens.
    ModelFamily(
        "gpt-4o",
        "GPT-4o",
        "gpt-4o",
        128_000,
        16_384,
        "https://platform.openai.com/docs/models/gpt-4o",
        {"vision": True},
    ),
    # https://platform.openai.com/docs/models/o4-mini : 200,000 context, 100,000 max output tokens. The
    # reasoning stays on OpenAI's side in Chat Completions (none returned, none to send back); max_tokens
    # is refused (see the module docstring), so the output limit stays empty.
    ModelFamily(
        "o-series",
        _("o-series reasoning models (o3, o4-mini)"),
        "o4-mini",
        200_000,
        None,
        "https://platform.openai.com/docs/guides/reasoning",
        {"vision": True, "reasoning_output": False, "reasoning_replay": False},
    ),
)

PRESETS: tuple[ProviderPreset, ...] = (
    ProviderPreset(
        provider="openai",
        label=_("OpenAI"),
        base_url="https://api.openai.com/v1",
        source="https://platform.openai.com/docs/api-reference/chat",
        key_help=_("Create a key at platform.openai.com → API keys (a project key is enough)."),
        # Function calling with parallel calls, tool_choice "required"/named, JSON mode:
        # https://platform.openai.com/docs/guides/function-calling , https://platform.openai.com/docs/guides/structured-outputs
        abilities={"reasoning_replay": False},
        families=_OPENAI_FAMILIES,
        embedding_families=OPENAI_EMBEDDINGS,
    ),
    ProviderPreset(
        provider="azure-openai",
        label=_("Azure OpenAI"),
        # The deployment URL with the dated API: https://learn.microsoft.com/azure/ai-services/openai/reference
        # (data plane inference, latest GA 2024-10-21; the key goes in the "api-key" header). The model
        # field is the deployment's name; the deployment decides the model.
        base_url="https://{resource}.openai.azure.com/openai/deployments/{deployment}",
        source="https://learn.microsoft.com/azure/ai-services/openai/reference",
        key_help=_(
            "Azure portal → your Azure OpenAI resource → Keys and Endpoint (KEY 1 or KEY 2). {resource} is "
            "the resource name, {deployment} the deployment name from Azure AI Foundry → Deployments."
        ),
        api_version="2024-10-21",
        api_key_header="api-key",
        abilities={"reasoning_replay": False},
        families=_OPENAI_FAMILIES,
        # The deployment of an embedding model answers at <deployment URL>/embeddings the same way.
        embedding_families=OPENAI_EMBEDDINGS,
    ),
    ProviderPreset(
        provider="deepseek",
        label=_("DeepSeek"),
        # https://api-docs.deepseek.com/quick_start/pricing : base URL https://api.deepseek.com,
        # deepseek-v4-flash and deepseek-v4-pro: 1M context, 384K maximum output, JSON output and tool calls;
        # deepseek-chat / deepseek-reasoner are the old names of v4-flash's non-thinking / thinking modes.
        base_url="https://api.deepseek.com",
        source="https://api-docs.deepseek.com/quick_start/pricing",
        key_help=_("Create a key at platform.deepseek.com → API keys."),
        # https://api-docs.deepseek.com/guides/thinking_mode : thinking on by default, reasoning_content
        # returned, and that of tool-calling turns must be passed back; tool_choice ("none", "auto", "required"
        # or a named function) is not among the parameters thinking mode ignores or refuses
        # (https://api-docs.deepseek.com/api/create-chat-completion). Parallel tool calls: not verified in the
        # documents read — off (the engine then asks for one call per turn).
        abilities={"reasoning_output": True, "reasoning_replay": True, "parallel_tool_calls": False},
        families=(
            ModelFamily(
                "deepseek-v4-flash",
                "DeepSeek-V4-Flash",
                "deepseek-v4-flash",
                1_000_000,
                None,  # 384K is the maximum, not a sensible per-call limit: the provider's default
                "https://api-docs.deepseek.com/quick_start/pricing",
            ),
            ModelFamily(
                "deepseek-v4-pro",
                "DeepSeek-V4-Pro",
                "deepseek-v4-pro",
                1_000_000,
                None,
                "https://api-docs.deepseek.com/quick_start/pricing",
            ),
            # The non-thinking alias: no reasoning.
            ModelFamily(
                "deepseek-chat",
                _("deepseek-chat (old name, non-thinking)"),
                "deepseek-chat",
                128_000,
                8_192,  # https://api-docs.deepseek.com/quick_start/pricing (V3.2 era): max 8K
                "https://api-docs.deepseek.com/quick_start/pricing",
                {"reasoning_output": False},
            ),
            ModelFamily(
                "deepseek-reasoner",
                _("deepseek-reasoner (old name, thinking)"),
                "deepseek-reasoner",
                128_000,
                32_768,  # https://api-docs.deepseek.com/guides/thinking_mode : max_tokens default 32K, max 64K
                "https://api-docs.deepseek.com/guides/thinking_mode",
            ),
        ),
    ),
    ProviderPreset(
        provider="qwen-dashscope",
        label=_("Qwen (Alibaba Cloud Model Studio / DashScope)"),
        # https://help.aliyun.com/zh/model-studio/compatibility-of-openai-with-dashscope : Beijing
        # https://dashscope.aliyuncs.com/compatible-mode/v1, Singapore https://dashscope-intl.aliyuncs.com/compatible-mode/v1
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1",
        source="https://help.aliyun.com/zh/model-studio/compatibility-of-openai-with-dashscope",
        key_help=_(
            "Create a key in the Model Studio (百炼) console → API-KEY. International accounts use "
            "dashscope-intl.aliyuncs.com instead of dashscope.aliyuncs.com."
        ),
        # https://www.alibabacloud.com/help/en/model-studio/deep-thinking : reasoning in reasoning_content.
        # https://help.aliyun.com/zh/model-studio/qwen-function-calling : tool_choice names a function;
        # several calls in one reply only with parallel_tool_calls true (off by default) — off here, so the
        # engine asks for one call per turn. JSON mode needs "json" in the prompt (the engine says it):
        # https://help.aliyun.com/zh/model-studio/json-mode
        abilities={"reasoning_replay": True, "parallel_tool_calls": False},
        families=(
            # Context 131,072 and output 16,384 (non-thinking): https://help.aliyun.com/zh/model-studio/models
            # (the Qwen-Plus row; not verified in this round for the newest snapshot — conservative).
            ModelFamily(
                "qwen-plus",
                "Qwen-Plus",
                "qwen-plus",
                131_072,
                16_384,
                "https://help.aliyun.com/zh/model-studio/models",
            ),
            # Qwen-Max: 32,768 context, 8,192 output (https://help.aliyun.com/zh/model-studio/models; not verified
            # for qwen3-max, whose window is larger — conservative).
            ModelFamily(
                "qwen-max",
                "Qwen-Max",
                "qwen-max",
                32_768,
                8_192,
                "https://help.aliyun.com/zh/model-studio/models",
            ),
            # Qwen3 open-source models in thinking mode answer streamed requests only ("The thinking mode only
            # supports incremental output", https://www.alibabacloud.com/help/en/model-studio/deep-thinking);
            # JSON mode is refused in thinking mode (https://help.aliyun.com/zh/model-studio/json-mode) — off;
            # a forced tool choice in thinking mode: not verified — off.
            ModelFamily(
                "qwen3-thinking",
                _("Qwen3 open-source, thinking (stream only)"),
                "qwen3-235b-a22b",
                131_072,
                None,
                "https://www.alibabacloud.com/help/en/model-studio/deep-thinking",
                {
                    "stream_only": True,
                    "reasoning_output": True,
                    "json_mode": False,
                    "forced_tool_choice": False,
                },
            ),
        ),
        embedding_families=DASHSCOPE_EMBEDDINGS,
        # The OpenAI-compatible rerank is apart from the chat API (compatible-api, not compatible-mode) and
        # posted to /reranks: agents.rerank_presets.
        rerank_families=DASHSCOPE_RERANKERS,
        rerank_base_url="https://dashscope-intl.aliyuncs.com/compatible-api/v1",
        rerank_path="/reranks",
    ),
    ProviderPreset(
        provider="glm-zhipu",
        label=_("GLM (Zhipu AI)"),
        # https://docs.bigmodel.cn/api-reference/模型-api/对话补全 : POST https://open.bigmodel.cn/api/paas/v4/chat/completions,
        # Bearer key; tool_choice: only "auto" (forced choice off); response_format json_object.
        base_url="https://open.bigmodel.cn/api/paas/v4",
        source="https://docs.bigmodel.cn/api-reference/%E6%A8%A1%E5%9E%8B-api/%E5%AF%B9%E8%AF%9D%E8%A1%A5%E5%85%A8",
        key_help=_(
            "Create a key at open.bigmodel.cn → API keys (international: api.z.ai with base URL "
            "https://api.z.ai/api/paas/v4)."
        ),
        # Thinking (reasoning_content, kept with tool calls): https://docs.bigmodel.cn/cn/guide/capabilities/thinking-mode .
        # Parallel tool calls: not verified — off.
        abilities={
            "forced_tool_choice": False,
            "parallel_tool_calls": False,
            "reasoning_output": True,
            "reasoning_replay": True,
        },
        families=(
            # GLM-4.6: 200K context, 128K maximum output (https://docs.bigmodel.cn/cn/guide/models/text/glm-4.6);
            # the per-call limit is left to the provider's default.
            ModelFamily(
                "glm-4.6",
                "GLM-4.6 / GLM-4.7",
                "glm-4.6",
                200_000,
                None,
                "https://docs.bigmodel.cn/cn/guide/models/text/glm-4.6",
            ),
            # GLM-4.5-Air: 128K context (https://docs.bigmodel.cn/cn/guide/models/text/glm-4.5).
            ModelFamily(
                "glm-4.5-air",
                "GLM-4.5-Air",
                "glm-4.5-air",
                128_000,
                None,
                "https://docs.bigmodel.cn/cn/guide/models/text/glm-4.5",
            ),
        ),
        embedding_families=ZHIPU_EMBEDDINGS,
    ),
    ProviderPreset(
        provider="kimi-moonshot",
        label=_("Kimi (Moonshot AI)"),
        # https://platform.moonshot.cn/docs/api/chat : base https://api.moonshot.cn/v1 (international
        # https://api.moonshot.ai/v1); tool_choice "none"/"auto" or a named function, and with thinking on
        # only "auto"/"none" (forced off); response_format json_object.
        base_url="https://api.moonshot.cn/v1",
        source="https://platform.moonshot.cn/docs/api/chat",
        key_help=_(
            "Create a key at platform.moonshot.cn → API Key management (international accounts: "
            "platform.moonshot.ai, base URL https://api.moonshot.ai/v1)."
        ),
        abilities={"forced_tool_choice": False, "reasoning_replay": True},
        families=(
            # kimi-k2: 256K (262,144) context: https://platform.moonshot.cn/docs/introduction
            ModelFamily(
                "kimi-k2",
                "Kimi K2",
                "kimi-k2-0905-preview",
                262_144,
                None,
                "https://platform.moonshot.cn/docs/introduction",
            ),
            # kimi-k2-thinking: reasoning_content streamed first and needed back with tool calls:
            # https://platform.moonshot.cn/docs/guide/use-kimi-k2-thinking-model
            ModelFamily(
                "kimi-k2-thinking",
                _("Kimi K2 thinking"),
                "kimi-k2-thinking",
                262_144,
                None,
                "https://platform.moonshot.cn/docs/guide/use-kimi-k2-thinking-model",
                {"reasoning_output": True},
            ),
        ),
    ),
    ProviderPreset(
        provider="doubao-ark",
        label=_("Doubao (Volcengine Ark)"),
        # https://www.volcengine.com/docs/82379/1330626 : OpenAI-compatible base https://ark.cn-beijing.volces.com/api/v3,
        # Bearer ARK API key; the model is a model ID or an endpoint ID (ep-...).
        base_url="https://ark.cn-beijing.volces.com/api/v3",
        source="https://www.volcengine.com/docs/82379/1330626",
        key_help=_(
            "Volcengine console → Ark → API Key management. Enable the model first (Model Plaza); put its "
            "model ID or your inference endpoint ID (ep-…) as the model name."
        ),
        # Forced tool_choice, parallel calls and JSON mode: not verified for every Doubao model — off.
        abilities={
            "forced_tool_choice": False,
            "parallel_tool_calls": False,
            "json_mode": False,
            "reasoning_replay": True,
        },
        families=(
            # doubao-seed-1.6: 256K context, deep thinking (reasoning_content), image input:
            # https://www.volcengine.com/docs/82379/1593702 (output limit not verified — provider default).
            ModelFamily(
                "doubao-seed-1.6",
                "Doubao-Seed-1.6",
                "doubao-seed-1-6-251015",
                256_000,
                None,
                "https://www.volcengine.com/docs/82379/1593702",
                {"reasoning_output": True, "vision": True},
            ),
        ),
        embedding_families=DOUBAO_EMBEDDINGS,
    ),
    _self_hosted(
        "vllm",
        _("vLLM (self-hosted)"),
        # https://docs.vllm.ai/en/latest/features/tool_calling.html : tools need --enable-auto-tool-choice
        # and --tool-call-parser; tool_choice "required" and named functions are supported; without a parser
        # the model writes its tool call as text (switch off function calling then).
        port=8000,
        source="https://docs.vllm.ai/en/latest/features/tool_calling.html",
        key_help=_(
            "The key given to vllm serve with --api-key (any value if the server has none). The operator "
            "must allow the host with MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS."
        ),
        # The window is the server's --max-model-len; 32,768 is a conservative guess, not a fact.
        family=_served_model(
            "vllm-default",
            _("Any served model"),
            32_768,
            "https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html",
        ),
        embedding_families=VLLM_EMBEDDINGS,
        rerank_families=VLLM_RERANKERS,
    ),
    _self_hosted(
        "sglang",
        _("SGLang (self-hosted)"),
        # https://docs.sglang.ai/advanced_features/tool_parser.html : tools need --tool-call-parser;
        # tool_choice "required" and a named function are supported. Default port 30000.
        port=30000,
        source="https://docs.sglang.ai/advanced_features/tool_parser.html",
        key_help=_(
            "The key given to the server with --api-key (any value if none). The operator must allow the "
            "host with MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS."
        ),
        # The window is the server's --context-length; a conservative guess.
        family=_served_model(
            "sglang-default",
            _("Any served model"),
            32_768,
            "https://docs.sglang.ai/basic_usage/openai_api_completions.html",
        ),
    ),
    _self_hosted(
        "ollama",
        _("Ollama (self-hosted)"),
        # https://docs.ollama.com/api/openai-compatibility : base http://localhost:11434/v1, the key is
        # required by clients but ignored; supported: streaming, JSON mode, vision, tools. tool_choice is not
        # among the fields it lists as supported in the versions read — forced choice off; parallel calls
        # not verified — off.
        port=11434,
        source="https://docs.ollama.com/api/openai-compatibility",
        key_help=_(
            "Ollama ignores the key: leave it empty or put any value. The operator must allow the host with "
            "MODEL_ENDPOINT_ALLOWED_PRIVATE_HOSTS."
        ),
        abilities={"forced_tool_choice": False, "parallel_tool_calls": False},
        # The served window is OLLAMA_CONTEXT_LENGTH (small by default); 8,192 is this form's minimum.
        family=_served_model("ollama-default", _("Any pulled model"), 8_192, "https://docs.ollama.com/faq"),
        embedding_families=OLLAMA_EMBEDDINGS,
    ),
    # Reranking only (agents.rerank_presets): no chat family.
    ProviderPreset(
        provider="jina",
        label=_("Jina AI (reranking)"),
        base_url="https://api.jina.ai/v1",
        source="https://jina.ai/reranker/",
        key_help=_("Your Jina AI API key (jina.ai, API key in your account); sent as a Bearer token."),
        families=(),
        rerank_families=JINA_RERANKERS,
    ),
    ProviderPreset(
        provider="cohere",
        label=_("Cohere (reranking)"),
        base_url="https://api.cohere.ai/v2",
        source="https://docs.cohere.com/v2/docs/rerank-overview",
        key_help=_("Create a key at dashboard.cohere.com → API keys; sent as a Bearer token."),
        families=(),
        rerank_families=COHERE_RERANKERS,
    ),
)

_BY_PROVIDER = {preset.provider: preset for preset in PRESETS}


def preset_for(provider: str | None) -> ProviderPreset | None:
    """The preset of ``provider`` (None for "custom" and unknown providers)."""
    return _BY_PROVIDER.get(provider or "")


def api_key_header_for(provider: str | None) -> str | None:
    """The header the provider takes the key in, when not ``Authorization: Bearer``."""
    preset = preset_for(provider)
    return preset.api_key_header if preset else None


# The roles whose endpoints never chat (agents.models.NON_CHAT_ROLES; that module imports this one).
NON_CHAT_ROLES = ("embedding", "rerank")
RERANK_ROLE = "rerank"


def chat_provider_problem(provider: str | None, role: str) -> str | None:
    """Why an endpoint of ``role`` cannot use ``provider`` (a chat role with a provider whose preset offers
    no chat model: Jina AI and Cohere are for reranking here), or ``None``."""
    preset = preset_for(provider)
    if preset is None or preset.families or role in NON_CHAT_ROLES:
        return None
    return gettext("This provider's preset is for reranking only: choose the role “Rerank”.")


def rerank_path_for(provider: str | None) -> str:
    """The path a rerank request is posted to under the endpoint's base URL: ``/rerank``, or the
    provider's own (DashScope: ``/reranks``)."""
    preset = preset_for(provider)
    return preset.rerank_path if preset is not None else "/rerank"


def rerank_base_url_problem(provider: str | None, role: str, base_url: str) -> str | None:
    """Why ``base_url`` cannot be a rerank endpoint's: the provider's rerank API lives elsewhere than its
    chat API, and ``base_url`` is the chat API's (the form fills that one in), or ``None``."""
    preset = preset_for(provider)
    if role != RERANK_ROLE or preset is None or not preset.rerank_base_url:
        return None
    if base_url.rstrip("/") != preset.base_url.rstrip("/"):
        return None
    return gettext("This provider's rerank API is not at its chat API's address: use %(url)s.") % {
        "url": preset.rerank_base_url
    }


EMBEDDING_BATCH_DEFAULT = 64  # texts per embedding request where the provider takes more (or does not say)


def embedding_family_for(provider: str | None, model: str) -> EmbeddingFamily | None:
    """The embedding family of ``provider`` whose model is ``model``, else None."""
    preset = preset_for(provider)
    if preset is None or not model:
        return None
    return next((f for f in preset.embedding_families if f.model and f.model == model), None)


def embedding_batch_size(provider: str | None, model: str) -> int:
    """How many texts one embedding request carries: :data:`EMBEDDING_BATCH_DEFAULT`, fewer where the
    provider documents fewer for that model (DashScope: 10)."""
    family = embedding_family_for(provider, model)
    if family is None or family.max_batch is None:
        return EMBEDDING_BATCH_DEFAULT
    return min(EMBEDDING_BATCH_DEFAULT, family.max_batch)


def presets_as_data() -> list[dict[str, Any]]:
    """Every preset as plain JSON data (the API's and the admin form's), labels in the active language."""
    return [
        {
            "provider": p.provider,
            "label": str(p.label),
            "base_url": p.base_url,
            "source": p.source,
            "key_help": str(p.key_help),
            "api_version": p.api_version,
            "api_key_header": p.api_key_header or "",
            "headers": dict(p.headers),
            "abilities": p.abilities_for(),
            "families": [
                {
                    "key": f.key,
                    "label": str(f.label),
                    "model": f.model,
                    "context_window": f.context_window,
                    "max_output_tokens": f.max_output_tokens,
                    "source": f.source,
                    "abilities": p.abilities_for(f.key),
                }
                for f in p.families
            ],
            "embedding_families": [
                {
                    "key": f.key,
                    "label": str(f.label),
                    "model": f.model,
                    "role": "embedding",
                    "dimension": f.dimension,
                    "dimensions": list(f.dimensions),
                    "max_input_tokens": f.max_input_tokens,
                    "max_batch": f.max_batch,
                    "source": f.source,
                }
                for f in p.embedding_families
            ],
            "rerank_families": [
                {
                    "key": f.key,
                    "label": str(f.label),
                    "model": f.model,
                    "role": RERANK_ROLE,
                    "base_url": p.rerank_base_url or p.base_url,
                    "path": p.rerank_path,
                    "max_documents": f.max_documents,
                    "max_input_tokens": f.max_input_tokens,
                    "source": f.source,
                }
                for f in p.rerank_families
            ],
        }
        for p in PRESETS
    ]
