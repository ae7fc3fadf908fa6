"""The LLM contract of the engine and its OpenAI-compatible implementation.

The engine talks to models only through the :class:`LLM` protocol. Messages are plain
OpenAI chat-completions dicts (``{"role": ..., "content": ...}``, assistant messages may
carry ``tool_calls``, tool messages carry ``tool_call_id``), so they can be sent to any
OpenAI-compatible endpoint without conversion.

Keys that begin with ``_`` (``_pinned``, ``_tokens``, ...) are engine metadata on a message:
every implementation strips them before a request leaves the process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

Message = dict[str, Any]


@dataclass(slots=True)
class Usage:
    """Token usage, accumulated across calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    calls: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens
        self.calls += other.calls

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "calls": self.calls,
        }


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One tool call requested by the model. ``arguments`` is the raw JSON string it sent."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """The reply of one non-streaming ``chat()`` call."""

    content: str | None
    tool_calls: tuple[ToolCallRequest, ...] = ()
    reasoning_content: str | None = None
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model: str | None = None

    def assistant_message(self) -> Message:
        """The OpenAI-format assistant message to append to the history."""
        message: Message = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class LLMError(Exception):
    """A provider call failed after the client's own retries."""


class ContextLengthExceededError(LLMError):
    """The provider refused the request because the prompt is longer than its context window."""


@runtime_checkable
class LLM(Protocol):
    """What the engine needs from a model endpoint."""

    abilities: Mapping[str, bool]
    """``{"tool_call": bool, "json_mode": bool}``."""

    context_window: int

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> ChatResponse: ...

    def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        usage: Usage | None = None,
    ) -> AsyncIterator[str]:
        """Yield content deltas as they arrive.

        When ``usage`` is given, the stream's token usage is added to it once the stream ends
        (an estimate when the provider reports none). Per-run usage is accumulated by the caller
        from ``ChatResponse.usage`` and this sink, never by shared state on the LLM instance.
        """
        ...
