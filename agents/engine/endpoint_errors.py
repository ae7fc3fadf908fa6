"""What an endpoint's error answer says about its configuration: the setting an admin must change
(:func:`misconfiguration`), and how long a rate-limited endpoint asked to wait (:func:`retry_after_seconds`).

The settings are named as the endpoint form names them (``agents.models.ModelConfig``'s labels).
"""

from __future__ import annotations

import email.utils
import math
import re
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

_AZURE_HOSTS = ("openai.azure.com", "cognitiveservices.azure.com", "services.ai.azure.com")

# DashScope (QwQ, Qwen3 open-source models thinking): "This model only support stream mode, please enable the
# stream parameter to access the model." (https://help.aliyun.com/zh/model-studio/deep-thinking; the body as
# reported in github.com/FoundationAgents/OpenManus/issues/330).
_STREAM_ONLY_RE = re.compile(r"only supports? stream|stream mode", re.IGNORECASE)
# Azure OpenAI without ?api-version=: "The api-version query parameter (?api-version=) is required for all
# requests." (https://learn.microsoft.com/azure/ai-foundry/openai/reference).
# OpenAI's o1-era models refuse streaming: 400 "Unsupported value: 'stream' does not support true with this model"
# (as reported in github.com/chathub-dev/chathub/issues/1294).
_NO_STREAM_RE = re.compile(r"'stream' does not support true|streaming is not supported", re.IGNORECASE)
# An output limit above the model's: Volcengine Ark "The parameter `max_tokens` specified in the request are not
# valid: integer above maximum value, expected a value <= 4096, but got 8192 instead." (as reported in
# github.com/langgenius/dify/issues/14376; not a context-length error, github.com/NousResearch/hermes-agent/issues/51773),
# OpenAI "max_tokens is too large: 9000. This model supports at most 4096 completion tokens".
_OUTPUT_LIMIT_RE = re.compile(
    r"max_(completion_)?tokens\b.*(not valid|too large|maximum value|less than or equal|at most)",
    re.IGNORECASE | re.DOTALL,
)
_API_VERSION_RE = re.compile(r"api-version", re.IGNORECASE)
# Azure OpenAI with the key in the wrong header: 401 "Access denied due to invalid subscription key or wrong API
# endpoint." (https://learn.microsoft.com/azure/ai-foundry/openai/reference, key in ``api-key``).
_AZURE_KEY_RE = re.compile(r"subscription key|wrong API endpoint", re.IGNORECASE)
_DEPLOYMENT_RE = re.compile(r"DeploymentNotFound|deployment for this resource does not exist", re.IGNORECASE)
# Ollama, a model whose template declares no tools: 400 "<model> does not support tools"
# (github.com/ollama/ollama/issues/6027, #5793).
_NO_TOOLS_RE = re.compile(r"does not support tools", re.IGNORECASE)
# vLLM started without a tool parser: 400 '"auto" tool choice requires --enable-auto-tool-choice and
# --tool-call-parser to be set' (https://docs.vllm.ai/en/latest/features/tool_calling/).
_NO_TOOL_PARSER_RE = re.compile(r"enable-auto-tool-choice|tool-call-parser", re.IGNORECASE)


def is_azure(base_url: str) -> bool:
    """Whether the base URL is an Azure OpenAI / Azure AI Foundry host."""
    host = (urlsplit(base_url).hostname or "").lower().rstrip(".")
    return any(host == h or host.endswith("." + h) for h in _AZURE_HOSTS)


def misconfiguration(
    status: int | None,
    detail: str,
    *,
    base_url: str,
    api_key_header: str | None,
    default_query: Mapping[str, str],
    stream_only: bool,
) -> str | None:
    """What to change in the endpoint's settings, when its error answer (``status``, ``detail``) means a
    setting is wrong; ``None`` for any other error. Never repeats a key or a header value."""
    if status == 401 and (is_azure(base_url) or _AZURE_KEY_RE.search(detail)) and api_key_header != "api-key":
        return (
            "the endpoint refused the key: Azure OpenAI takes it in the api-key header; set the endpoint's "
            "provider to Azure OpenAI"
        )
    if status in (400, 404) and _API_VERSION_RE.search(detail) and "api-version" not in default_query:
        return (
            "the endpoint requires an api-version query parameter: set the endpoint's 'API version' "
            "(for example 2024-10-21), or use its v1 base URL ending in /openai/v1"
        )
    if status == 404 and _DEPLOYMENT_RE.search(detail):
        return "the deployment in the base URL does not exist: check the deployment name in the 'base URL'"
    if status == 400 and _STREAM_ONLY_RE.search(detail) and not stream_only:
        return "the model answers only streamed requests: switch on 'answers streamed requests only'"
    if status == 400 and _NO_STREAM_RE.search(detail) and stream_only:
        return "the model does not answer streamed requests: switch off 'answers streamed requests only'"
    # vLLM's "'max_tokens' ... is too large ... maximum context length is N": the prompt plus the limit; a
    # compacted history may fit, so it stays a context-length error.
    if status == 400 and _OUTPUT_LIMIT_RE.search(detail) and "context" not in detail.lower():
        return "the output limit is above what the model allows: lower the endpoint's 'output limit (tokens)'"
    if status == 400 and _NO_TOOLS_RE.search(detail):
        return "the model does not support tools: switch off 'supports function calling'"
    if status == 400 and _NO_TOOL_PARSER_RE.search(detail):
        return (
            "the server has no tool parser: start it with --enable-auto-tool-choice and --tool-call-parser, "
            "or switch off 'supports function calling'"
        )
    return None


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP date
    (as the ``openai`` SDK reads them). ``None`` when it asks nothing (or nonsense)."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            value = float(milliseconds) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    header = headers.get("retry-after")
    if header is None:
        return None
    try:
        value = float(header)
    except ValueError:
        parsed = email.utils.parsedate_tz(header)
        if parsed is None:
            return None
        value = max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return value if math.isfinite(value) and value >= 0 else None


__all__ = ["is_azure", "misconfiguration", "retry_after_seconds"]
