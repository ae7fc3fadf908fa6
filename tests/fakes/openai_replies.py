"""Scripted replies for :mod:`tests.fakes.openai_server`: what the fake model answers.

Each request to the scripted server consumes one reply: :func:`text`, :func:`tool_calls`,
:func:`error`, :func:`context_length_error`, :func:`malformed` or :func:`hang` (or a callable
receiving the request body and returning one of them).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call the scripted model makes. ``arguments`` is the raw JSON text sent."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True)
class TextReply:
    content: str
    reasoning_content: str | None = None
    usage: dict[str, int] | None = None
    latency: float = 0.0
    chunk_size: int | None = None
    die_after_chunks: int | None = None
    finish_reason: str = "stop"
    omit_usage: bool = False


@dataclass(frozen=True)
class ToolCallsReply:
    calls: tuple[ToolCallSpec, ...]
    content: str | None = None
    reasoning_content: str | None = None
    latency: float = 0.0
    usage: dict[str, int] | None = None
    omit_usage: bool = False


@dataclass(frozen=True)
class ErrorReply:
    status: int
    message: str = "scripted error"
    code: str | None = None
    type: str = "invalid_request_error"
    headers: dict[str, str] = field(default_factory=dict)
    latency: float = 0.0


@dataclass(frozen=True)
class MalformedReply:
    body: bytes
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class HangReply:
    seconds: float
    then: Reply | None = None


Reply = TextReply | ToolCallsReply | ErrorReply | MalformedReply | HangReply
ReplySource = Reply | Callable[[dict[str, Any]], Reply]


def text(
    content: str,
    *,
    reasoning_content: str | None = None,
    usage: dict[str, int] | None = None,
    latency: float = 0.0,
    chunk_size: int | None = None,
    die_after_chunks: int | None = None,
    finish_reason: str = "stop",
    omit_usage: bool = False,
) -> TextReply:
    """A plain assistant answer.

    Streamed in ``chunk_size``-character pieces (default: three words a chunk).
    ``die_after_chunks=N`` drops the connection after N content chunks (no ``[DONE]``).
    ``omit_usage=True`` sends no ``usage`` at all, as some providers do.
    """
    return TextReply(
        content, reasoning_content, usage, latency, chunk_size, die_after_chunks, finish_reason, omit_usage
    )


def call(name: str, arguments: dict[str, Any] | str, *, id: str | None = None) -> ToolCallSpec:
    """A tool call; a ``str`` is sent verbatim (e.g. broken JSON), a dict is JSON-encoded."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return ToolCallSpec(name, raw, id)


def tool_calls(
    *calls: ToolCallSpec,
    content: str | None = None,
    reasoning_content: str | None = None,
    latency: float = 0.0,
    usage: dict[str, int] | None = None,
    omit_usage: bool = False,
) -> ToolCallsReply:
    """An assistant message requesting one or more tool calls (``finish_reason="tool_calls"``)."""
    return ToolCallsReply(tuple(calls), content, reasoning_content, latency, usage, omit_usage)


def error(
    status: int,
    *,
    message: str = "scripted error",
    code: str | None = None,
    headers: dict[str, str] | None = None,
    latency: float = 0.0,
    type: str = "invalid_request_error",
) -> ErrorReply:
    """An OpenAI-style error body with the given HTTP status.

    Unless ``headers`` says otherwise, a ``retry-after-ms: 1`` header keeps the SDK's own
    retries (429/5xx) fast.
    """
    merged = {"retry-after-ms": "1", **(headers or {})}
    return ErrorReply(status, message, code, type, merged, latency)


def context_length_error() -> ErrorReply:
    """The 400 OpenAI sends when the prompt exceeds the model's context window."""
    return error(
        400,
        message=(
            "This model's maximum context length is 8192 tokens. However, your messages resulted in "
            "9001 tokens. Please reduce the length of the messages."
        ),
        code="context_length_exceeded",
    )


def malformed(body: bytes, *, status: int = 200, content_type: str = "application/json") -> MalformedReply:
    """Raw bytes sent as the response body, e.g. ``b"not json"``."""
    return MalformedReply(body, status, content_type)


def hang(seconds: float, *, then: Reply | None = None) -> HangReply:
    """Wait ``seconds`` before answering (with ``then``, default an empty text reply)."""
    return HangReply(seconds, then)
