"""A model's reply (:class:`ChatResponse`, :class:`ToolCallRequest`, :class:`Usage`) and its
decoding from the OpenAI chat-completions wire format.

The reply is decoded from JSON into plain dicts and checked here, instead of being parsed by the
SDK into pydantic ``ChatCompletion``/``ChatCompletionChunk`` models: that parse cost a busy server
process a noticeable share of its CPU for the few fields we read, and it tolerated shapes we would
rather refuse (a ``tool_calls`` that is not a list was dropped silently, a tool call without an id
or name came through as ``None``). What we read is checked; what we do not read is not.

Every decoding failure is a ``ValueError``: the caller reports it as a malformed response.

The body itself is decoded leniently (a provider may send ``-Infinity`` in a log-probability we never
read): nothing of it can reach a tool's arguments, because every field we read is checked for its type
(a ``NaN`` token count or tool-call ``arguments`` that are not a string are refused) and the arguments
are a string that :func:`agents.engine.parsing.decode_arguments` decodes strictly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The fields a provider puts its reasoning in, next to ``content``: ``reasoning_content`` (DeepSeek,
#: Kimi/Moonshot, Qwen/DashScope, GLM/Zhipu, vLLM and SGLang reasoning parsers), ``reasoning`` (OpenRouter,
#: Ollama, newer vLLM) and ``reasoning_details`` (OpenRouter's structured blocks). Kept verbatim on the
#: assistant message of a tool-calling turn; whether they are sent back is the endpoint's choice (see
#: :mod:`agents.engine.reasoning`).
REASONING_FIELDS: tuple[str, ...] = ("reasoning_content", "reasoning", "reasoning_details")

_CJK_RE = re.compile(r"[\u3000-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(slots=True)
class Usage:
    """Token usage, accumulated across calls.

    ``cached_tokens`` (of the prompt, ``prompt_tokens_details.cached_tokens``) and ``reasoning_tokens`` (of
    the completion, ``completion_tokens_details.reasoning_tokens``) are parts of ``prompt_tokens`` and
    ``completion_tokens``, as the providers report them. ``estimated``: some call reported no usage.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    estimated: bool = False

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.calls += other.calls
        self.cached_tokens += other.cached_tokens
        self.reasoning_tokens += other.reasoning_tokens
        self.estimated = self.estimated or other.estimated

    def as_dict(self) -> dict[str, int]:
        """The counts as a plain mapping; the cached and reasoning counts only when there are any (the
        ``done`` payload of a provider without those details keeps its shape)."""
        data = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "calls": self.calls,
        }
        if self.cached_tokens:
            data["cached_tokens"] = self.cached_tokens
        if self.reasoning_tokens:
            data["reasoning_tokens"] = self.reasoning_tokens
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """The usage :meth:`as_dict` wrote (a checkpoint's)."""
        data = data or {}
        return cls(
            prompt_tokens=int(data.get("prompt_tokens", 0)),
            completion_tokens=int(data.get("completion_tokens", 0)),
            total_tokens=int(data.get("total_tokens", 0)),
            calls=int(data.get("calls", 0)),
            cached_tokens=int(data.get("cached_tokens", 0)),
            reasoning_tokens=int(data.get("reasoning_tokens", 0)),
        )


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One tool call requested by the model. ``arguments`` is the raw JSON string it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The reply of one non-streaming ``chat()`` call.

    ``reasoning_content`` is the model's reasoning as text (for the ``thinking`` step, never the answer);
    ``reasoning_fields`` are the reply's reasoning fields exactly as received (see :data:`REASONING_FIELDS`).
    """

    content: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    reasoning_content: str | None = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None
    reasoning_fields: Mapping[str, Any] | None = None

    def assistant_message(self) -> dict[str, Any]:
        """The OpenAI-format assistant message to append to the history.

        A turn with tool calls keeps its reasoning fields: DeepSeek's thinking mode, Kimi's thinking
        models and GLM's interleaved thinking require them back with the tool results (see
        :mod:`agents.engine.reasoning`); the LLM leaves them out for endpoints that take no such field.
        """
        message: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
            if self.reasoning_fields:
                message.update(self.reasoning_fields)
            elif self.reasoning_content is not None:
                message["reasoning_content"] = self.reasoning_content
        return message


# --- a non-streaming completion --------------------------------------------------------------


def chat_response(body: bytes, sent: Sequence[dict[str, Any]]) -> ChatResponse:
    """The :class:`ChatResponse` of a completion's JSON body; ``sent`` are the messages sent, for
    the usage estimate when the provider reports none.

    Read: ``choices[0].message`` (``content``, ``tool_calls`` of type ``function``, DeepSeek's
    ``reasoning_content`` or OpenRouter's ``reasoning``), ``choices[0].finish_reason``, ``usage``,
    ``model``. Raises ``ValueError`` for a body that is not JSON, a completion without choices,
    and for a field we read that has the wrong shape; a ``finish_reason`` or ``model`` that is
    not a string is only metadata and is dropped.
    """
    try:
        completion = json.loads(body)
    except ValueError:
        raise ValueError(f"the body is not JSON: {body[:80]!r}") from None
    if not isinstance(completion, dict):
        raise ValueError("the completion is not a JSON object")
    choices = completion.get("choices")
    if not choices:
        raise ValueError("the completion has no choices")
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ValueError("the completion's choices are not a list of objects")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("the choice has no message object")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("the message content is not a string")
    calls = _tool_calls(message.get("tool_calls"))
    reported = completion.get("usage")
    if reported is not None:
        usage = reported_usage(reported)
    else:
        usage = estimated_usage(sent, (content or "") + "".join(c.arguments for c in calls))
    return ChatResponse(
        content=content,
        tool_calls=calls,
        reasoning_content=_reasoning(message),
        usage=usage,
        finish_reason=_text(choice.get("finish_reason")),
        model=_text(completion.get("model")),
        reasoning_fields=_reasoning_fields(message),
    )


def _tool_calls(calls: Any) -> tuple[ToolCallRequest, ...]:
    """The function tool calls of a message (``null`` or absent: none)."""
    if calls is None:
        return ()
    if not isinstance(calls, list):
        raise ValueError("the message's tool_calls are not a list")
    requests: list[ToolCallRequest] = []
    for call in calls:
        if not isinstance(call, dict):
            raise ValueError("a tool call is not an object")
        if call.get("type") not in (None, "function"):
            continue  # custom (non-function) tool calls are not part of the contract
        function = call.get("function")
        if not isinstance(function, dict):
            raise ValueError("a function tool call has no function object")
        call_id, name, arguments = call.get("id"), function.get("name"), function.get("arguments")
        if not isinstance(call_id, str):
            raise ValueError("a tool call's id is not a string")
        if not isinstance(name, str):
            raise ValueError("a tool call's function name is not a string")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):
            raise ValueError("a tool call's arguments are not a JSON string")
        requests.append(ToolCallRequest(id=call_id, name=name, arguments=arguments))
    return tuple(requests)


def _reasoning(message: dict[str, Any]) -> str | None:
    """DeepSeek-style ``reasoning_content`` (or OpenRouter's ``reasoning``), sent as extra fields."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str):
            return value
    return None


def _reasoning_fields(message: dict[str, Any]) -> Mapping[str, Any] | None:
    """The message's reasoning fields that are present (``null`` ones are not), as received."""
    fields = {key: message[key] for key in REASONING_FIELDS if message.get(key) is not None}
    return fields or None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


# --- a streamed completion's chunks ----------------------------------------------------------


def delta_content(chunk: dict[str, Any]) -> str | None:
    """``choices[0].delta.content`` of a stream chunk (a choice without a delta has none)."""
    choices = chunk.get("choices")
    if not choices:
        return None
    if not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ValueError("a chunk's choices are not a list of objects")
    delta = choices[0].get("delta")
    if delta is None:
        return None
    if not isinstance(delta, dict):
        raise ValueError("a chunk's delta is not an object")
    content = delta.get("content")
    if content is not None and not isinstance(content, str):
        raise ValueError("a chunk's delta content is not a string")
    return content


def delta_reasoning(chunk: dict[str, Any]) -> str | None:
    """The reasoning text of a stream chunk's delta (``reasoning_content`` or ``reasoning``), if any.

    Only counted (it is generated and billed), never yielded: reasoning is not the answer.
    """
    choices = chunk.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return None
    delta = choices[0].get("delta")
    if not isinstance(delta, dict):
        return None
    for key in ("reasoning_content", "reasoning"):
        value = delta.get(key)
        if isinstance(value, str):
            return value
    return None


# --- usage -----------------------------------------------------------------------------------


def reported_usage(reported: Any) -> Usage:
    """The ``usage`` object of a completion or of a stream's last chunk."""
    if not isinstance(reported, dict):
        raise ValueError("the usage is not an object")
    prompt = reported.get("prompt_tokens") or 0
    completion = reported.get("completion_tokens") or 0
    total = reported.get("total_tokens") or 0
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (prompt, completion, total)):
        raise ValueError("the usage has a token count that is not an integer")
    cached = _detail(reported, "prompt_tokens_details", "cached_tokens")
    reasoning = _detail(reported, "completion_tokens_details", "reasoning_tokens")
    return Usage(
        prompt,
        completion,
        total or prompt + completion,
        calls=1,
        cached_tokens=min(cached, prompt),
        reasoning_tokens=min(reasoning, completion),
    )


def _detail(reported: dict[str, Any], details: str, key: str) -> int:
    """A count inside a usage's ``*_tokens_details`` object (absent or ``null``: 0).

    https://platform.openai.com/docs/api-reference/chat/object#chat/object-usage
    """
    block = reported.get(details)
    if block is None:
        return 0
    if not isinstance(block, dict):
        raise ValueError(f"the usage's {details} is not an object")
    value = block.get(key) or 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"the usage's {details}.{key} is not a count")
    return value


def chunk_usage(chunk: dict[str, Any]) -> Usage | None:
    """The usage a stream chunk reports, if any: at its top level (OpenAI's ``include_usage`` chunk, GLM's
    last chunk) or inside ``choices[0]`` (Kimi/Moonshot, as github.com/vercel/ai/pull/19727 documents)."""
    if chunk.get("usage") is not None:
        return reported_usage(chunk["usage"])
    choices = chunk.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        if choices[0].get("usage") is not None:
            return reported_usage(choices[0]["usage"])
    return None


def estimated_usage(messages: Sequence[dict[str, Any]], completion_text: str) -> Usage:
    """A rough usage for a provider that reports none."""
    prompt = sum(estimate_text_tokens(str(m.get("content") or "")) + 4 for m in messages)
    completion = estimate_text_tokens(completion_text)
    return Usage(prompt, completion, prompt + completion, calls=1, estimated=True)


def estimate_text_tokens(text: str) -> int:
    """A rough token count: one per CJK character, one per four other characters."""
    if not text:
        return 0
    cjk = len(_CJK_RE.findall(text))
    return cjk + (len(text) - cjk + 3) // 4
