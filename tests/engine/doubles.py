"""An in-process LLM double implementing the engine's LLM protocol.

Rule tests go through the scripted OpenAI-compatible HTTP server (``scripted_llm``/``make_llm``); this
double serves the benchmark (no HTTP cost in the measurement) and a few pure unit tests.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from agents.engine.llm import ChatResponse, LLMError, Message, ToolCallRequest, Usage

Reply = ChatResponse | Exception | Callable[[Sequence[Message]], "ChatResponse | Exception"]

_USAGE = Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15, calls=1)


def say(content: str, *, reasoning_content: str | None = None, usage: Usage | None = None) -> ChatResponse:
    """A text reply."""
    return ChatResponse(content=content, reasoning_content=reasoning_content, usage=usage or _USAGE)


def use(*calls: tuple[str, Mapping[str, Any] | str], content: str | None = None) -> ChatResponse:
    """A reply asking for tool calls: ``use(("search", {"q": "x"}), ...)``; ids are ``call_<n>``."""
    requests = tuple(
        ToolCallRequest(
            id=f"call_{index}",
            name=name,
            arguments=args if isinstance(args, str) else json.dumps(args),
        )
        for index, (name, args) in enumerate(calls)
    )
    return ChatResponse(content=content, tool_calls=requests, usage=_USAGE, finish_reason="tool_calls")


class FakeLLM:
    """Answers ``chat()`` from a queue of replies (or a ``responder`` callable), ``stream_chat()`` from a
    queue of streams (a string is streamed word by word; an exception is raised after the words before it).

    ``calls`` records each chat request (messages copied) unless ``record=False`` (the benchmark).
    """

    def __init__(
        self,
        *replies: Reply,
        responder: Callable[[Sequence[Message]], ChatResponse] | None = None,
        streams: Sequence[str | list[str | Exception]] = (),
        abilities: Mapping[str, bool] | None = None,
        context_window: int = 128000,
        record: bool = True,
    ) -> None:
        self.abilities = dict(abilities or {"tool_call": True, "json_mode": True})
        self.context_window = context_window
        self.replies: deque[Reply] = deque(replies)
        self.responder = responder
        self.streams: deque[str | list[str | Exception]] = deque(streams)
        self.record = record
        self.calls: list[dict[str, Any]] = []
        self.stream_calls: list[list[Message]] = []

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
    ) -> ChatResponse:
        if self.record:
            self.calls.append(
                {
                    "messages": [dict(m) for m in messages],
                    "tools": tools,
                    "tool_choice": tool_choice,
                    "response_format": response_format,
                }
            )
        if self.responder is not None:
            return self.responder(messages)
        if not self.replies:
            raise LLMError("FakeLLM: no reply scripted for this request")
        reply = self.replies.popleft()
        if callable(reply) and not isinstance(reply, ChatResponse | Exception):
            reply = reply(messages)
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        usage: Usage | None = None,
    ) -> AsyncIterator[str]:
        self.stream_calls.append([dict(m) for m in messages])
        if not self.streams:
            raise LLMError("FakeLLM: no stream scripted")
        script = self.streams.popleft()
        pieces: list[str | Exception] = (
            [w + " " for w in script.split(" ")] if isinstance(script, str) else script
        )
        for piece in pieces:
            if isinstance(piece, Exception):
                raise piece
            yield piece
        if usage is not None:
            usage.add(_USAGE)
