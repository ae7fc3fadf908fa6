"""An in-process LLM double implementing the engine's LLM protocol.

Rule tests go through the scripted OpenAI-compatible HTTP server (``scripted_llm``/``make_llm``); this
double serves the benchmark (no HTTP cost in the measurement) and a few pure unit tests.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

from agents.engine.events import Event
from agents.engine.llm import ChatResponse, LLMError, Message, ToolCallRequest, Usage
from agents.engine.metering import BudgetRefusal, CallPurpose, ModelCall, ModelCallUsage, Proceed
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Tool, ToolRegistry, ToolResult

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
        self.contexts: list[ToolCallContext] = []  # each call's context, in the order the calls began
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


# --- tools and an event recorder for engine tests ---------------------------------------------


class EventLog:
    """An ``on_event`` callback that keeps every event, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    async def __call__(self, event: Event) -> None:
        self.events.append(event)

    def channels(self) -> list[str]:
        return [e.channel for e in self.events]

    def steps(self, type_: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        """Payloads of ``step`` events, optionally of one type and status."""
        return [
            dict(e.data)
            for e in self.events
            if e.channel == "step"
            and (type_ is None or e.data.get("type") == type_)
            and (status is None or e.data.get("status") == status)
        ]

    def of(self, channel: str) -> list[dict[str, Any]]:
        return [dict(e.data) for e in self.events if e.channel == channel]

    def labels(self) -> list[str]:
        """``channel`` or ``channel:type:status`` per event: the sequence a client sees."""
        out = []
        for e in self.events:
            parts = [e.channel] + [str(e.data[k]) for k in ("type", "status") if k in e.data]
            out.append(":".join(parts))
        return out


QUERY_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {"q": {"type": "string"}},
    "required": ["q"],
    "additionalProperties": False,
}


class RecordingTool(Tool):
    """A tool that records its calls and answers ``"<name>: <args>"``; optionally slow, hanging or failing.

    ``gate`` (an asyncio.Event) makes every call wait for it; ``running``/``max_running`` track concurrency.
    """

    def __init__(
        self,
        name: str = "search",
        *,
        description: str = "Search the knowledge base.",
        parameters: Mapping[str, Any] | None = None,
        result: ToolResult | str | None = None,
        raises: Exception | None = None,
        delay: float = 0.0,
        gate: asyncio.Event | None = None,
        timeout: float | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.parameters = parameters if parameters is not None else QUERY_SCHEMA
        self.timeout = timeout
        self.result = result
        self.raises = raises
        self.delay = delay
        self.gate = gate
        self.calls: list[dict[str, Any]] = []
        self.contexts: list[ToolCallContext] = []  # each call's context, in the order the calls began
        self.running = 0
        self.max_running = 0
        self.cancelled = 0
        self._changed = asyncio.Event()

    async def until_running(self, count: int) -> None:
        """Wait until ``count`` calls are in flight at once."""
        while self.running < count:
            self._changed.clear()
            await self._changed.wait()

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult | str:
        self.calls.append(kwargs)
        self.contexts.append(ctx)
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self._changed.set()
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.delay:
                await asyncio.sleep(self.delay)
            if self.raises is not None:
                raise self.raises
            if self.result is not None:
                return self.result
            return f"{self.name}: {json.dumps(kwargs, sort_keys=True)}"
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1


def registry_of(*tools: Tool) -> ToolRegistry:
    return ToolRegistry(tools)


class SynthesisBudget:
    """A meter (for :class:`~agents.engine.metering.MeteredLLM`) whose budget, the organisation's monthly
    2,000 tokens "Acme", lets every call through but the answer's synthesis."""

    refusal = BudgetRefusal("Acme", "organization", "tokens", "month", "2000 tokens")

    async def before_model_call(self, call: ModelCall) -> Proceed | BudgetRefusal:
        return self.refusal if call.purpose == CallPurpose.SYNTHESIS else Proceed()

    async def after_model_call(self, report: ModelCallUsage) -> None:
        return None
