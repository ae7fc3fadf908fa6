"""The rules of the scripted server's provider profiles: what a profile can say about a provider
(:class:`ProviderProfile`), which requests it refuses (:func:`refusal_of`), and how a model without a tool
parser writes its calls. The profiles themselves are in :mod:`tests.fakes.provider_profiles`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.fakes.openai_replies import ErrorReply

ToolIndex = Literal["sequential", "absent", "zero"]
UsagePlacement = Literal["empty_choices", "last_chunk", "in_choice", "absent"]

#: Every quirk name ``server.quirks`` may count, with what it means.
QUIRKS: Mapping[str, str] = {
    "reasoning_sent": "the reply carried the profile's reasoning (streamed before the content)",
    "reasoning_back_refused": "a tool-calling turn came back without its reasoning: 400",
    "reasoning_back_accepted": "a request carried tool-calling turns with their reasoning",
    "stream_only_refused": "a non-streamed request to a stream-only model: 400",
    "auth_header_refused": "the key was not in the provider's own header (Azure api-key): 401",
    "query_refused": "a required query parameter (Azure api-version) was missing: 400",
    "tool_choice_refused": "tool_choice 'required' or a named function refused: 400",
    "auto_tool_choice_refused": "tool_choice 'auto' without a tool parser (vLLM): 400",
    "json_word_refused": "json_object without the word 'json' in the messages: 400",
    "json_mode_refused": "response_format json_object refused: 400",
    "max_tokens_refused": "max_tokens above the model's output limit: 400",
    "parallel_reduced_to_one": "several scripted calls, the provider returned only the first",
    "parallel_field_refused": "the parallel_tool_calls field refused (older Azure deployments): 400",
    "tool_calls_as_text": "the tool call came back as text in content (no tool parser)",
    "tool_delta_without_index": "streamed tool-call deltas carried no index",
    "tool_delta_index_reused": "every streamed tool call had index 0",
    "tool_arguments_whole": "a streamed tool call came whole in one chunk",
    "tool_id_first_only": "only a tool call's first chunk carried its id",
    "finish_stop_with_tool_calls": "finish_reason 'stop' although the reply has tool calls",
    "content_empty_with_tool_calls": "content '' (not null) next to tool calls",
    "usage_empty_choices_chunk": "the stream's usage came in a last chunk with empty choices",
    "usage_in_last_chunk": "the stream's usage came on the chunk with the finish_reason",
    "usage_in_choice": "the stream's usage came inside choices[0] of the last chunk",
    "usage_absent": "no usage at all",
    "prompt_filter_chunk": "the stream began with an empty-choices chunk of prompt filter results",
    "rate_limited": "a 429 with Retry-After in the provider's words",
    "context_length": "a context-length error in the provider's words",
}


@dataclass(frozen=True)
class ProviderError:
    """An HTTP error body as one provider sends it."""

    status: int
    message: str
    code: str | None = None
    type: str = "invalid_request_error"


@dataclass(frozen=True, eq=False)
class ProviderProfile:
    """One provider's documented departures from OpenAI's Chat Completions API (``source``: where it says so)."""

    name: str
    source: str
    abilities: Mapping[str, bool] = field(default_factory=dict)
    base_path: str = "/v1"
    references: tuple[str, ...] = ()
    # reasoning: sent as ``reasoning_field`` with every reply that scripts none; with
    # ``reasoning_back_required`` a tool-calling turn sent back without it is refused with ``refusal``.
    reasoning: str | None = None
    reasoning_field: str = "reasoning_content"
    reasoning_back_required: bool = False
    refusal: str = ""
    # requests refused (HTTP 4xx) before any scripted reply is taken
    stream_only: ProviderError | None = None
    auth_header: str | None = None
    auth_refusal: ProviderError | None = None
    required_query: tuple[str, ...] = ()
    query_refusal: ProviderError | None = None
    versionless_path: str | None = None  # a base path that needs no ``required_query`` (Azure's v1 API)
    refused_tool_choices: frozenset[str] = frozenset()  # "required", "named"
    tool_choice_refusal: ProviderError | None = None
    json_word_refusal: ProviderError | None = None
    json_mode_refusal: ProviderError | None = None
    auto_tool_choice_refusal: ProviderError | None = None
    parallel_field_refusal: ProviderError | None = (
        None  # a request carrying ``parallel_tool_calls`` is refused
    )
    max_output_tokens: int | None = None  # a larger ``max_tokens`` is refused with ``max_tokens_refusal``
    max_tokens_refusal: ProviderError | None = None
    # an image part sent to a profile without the vision ability (its own wording, else IMAGE_REFUSAL's)
    image_refusal: ProviderError | None = None
    # replies
    parallel: Literal["yes", "one", "on_request"] = "yes"
    tool_calls_as_text: Literal["hermes", "json"] | None = None
    tool_index: ToolIndex = "sequential"
    tool_arguments_whole: bool = False
    finish_with_tool_calls: str = "tool_calls"
    content_with_tool_calls: Literal["null", "empty"] = "null"
    usage: UsagePlacement = "empty_choices"
    prompt_filter_chunk: bool = False
    context_length: ProviderError | None = None
    rate_limit: ProviderError | None = None

    def __repr__(self) -> str:
        return f"ProviderProfile({self.name!r})"


# --- what a request must look like ------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """What the server saw of one request, for the profile's rules."""

    body: dict[str, Any]
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]  # lower-cased names


def refusal_of(profile: ProviderProfile, request: Request) -> tuple[str, ProviderError] | None:
    """The quirk name and error with which ``profile`` refuses ``request``, or ``None``."""
    body = request.body
    if profile.auth_header and profile.auth_refusal and not request.headers.get(profile.auth_header):
        return "auth_header_refused", profile.auth_refusal
    versionless = profile.versionless_path and request.path.startswith(profile.versionless_path + "/")
    missing = [q for q in profile.required_query if not request.query.get(q)]
    if missing and profile.query_refusal and not versionless:
        return "query_refused", profile.query_refusal
    if profile.stream_only and not body.get("stream"):
        return "stream_only_refused", profile.stream_only
    choice = body.get("tool_choice")
    if body.get("tools") and choice is not None:
        kind = "named" if isinstance(choice, dict) else str(choice)
        if kind in profile.refused_tool_choices and profile.tool_choice_refusal:
            return "tool_choice_refused", profile.tool_choice_refusal
        if kind == "auto" and profile.auto_tool_choice_refusal:
            return "auto_tool_choice_refused", profile.auto_tool_choice_refusal
    if "parallel_tool_calls" in body and profile.parallel_field_refusal:
        return "parallel_field_refused", profile.parallel_field_refusal
    asked = body.get("max_tokens")
    if profile.max_output_tokens and isinstance(asked, int) and asked > profile.max_output_tokens:
        if profile.max_tokens_refusal:
            return "max_tokens_refused", profile.max_tokens_refusal
    if not profile.abilities.get("vision") and _has_image(body):
        return "image_refused", profile.image_refusal or IMAGE_REFUSAL
    if (body.get("response_format") or {}).get("type") == "json_object":
        if profile.json_mode_refusal:
            return "json_mode_refused", profile.json_mode_refusal
        if profile.json_word_refusal and not _mentions_json(body):
            return "json_word_refused", profile.json_word_refusal
    return None


#: How a text-only model's server refuses an image part when its provider documents no wording (vLLM's
#: "is not a multimodal model" and the like: a 400 of the request's validation).
IMAGE_REFUSAL = ProviderError(400, "This model does not support image input.")


def _has_image(body: dict[str, Any]) -> bool:
    return any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for message in body.get("messages") or []
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
    )


def _mentions_json(body: dict[str, Any]) -> bool:
    return "json" in json.dumps(body.get("messages") or [], ensure_ascii=False).lower()


def error_reply(error: ProviderError, headers: Mapping[str, str] | None = None) -> ErrorReply:
    """The scripted reply sending ``error`` as its provider does."""
    return ErrorReply(error.status, error.message, error.code, error.type, dict(headers or {}))


def bare_json_tool_calls(calls: list[tuple[str, str]]) -> str:
    """Tool calls as bare JSON in content (a model whose template has no tool markers, no parser reading it)."""
    written = [{"name": name, "arguments": _decoded(arguments)} for name, arguments in calls]
    return json.dumps(written[0] if len(written) == 1 else written)


def _decoded(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def hermes_tool_calls(calls: list[tuple[str, str]]) -> str:
    """Tool calls as a Hermes-style model writes them when no tool parser reads its output."""
    blocks = [json.dumps({"name": name, "arguments": _decoded(arguments)}) for name, arguments in calls]
    return "\n".join(f"<tool_call>\n{block}\n</tool_call>" for block in blocks)


__all__ = [
    "QUIRKS",
    "ProviderError",
    "ProviderProfile",
    "Request",
    "bare_json_tool_calls",
    "error_reply",
    "hermes_tool_calls",
    "refusal_of",
]
