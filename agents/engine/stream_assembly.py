"""A whole reply (:class:`~agents.engine.completion.ChatResponse`) assembled from the chunks of a streamed
completion, for endpoints that answer only streamed requests (the ``stream_only`` ability).

Providers stream the same reply in different shapes, and the assembly accepts each:

- tool-call deltas with an ``index`` (OpenAI), without one (Kimi/Moonshot, github.com/vercel/ai/pull/19727;
  Ollama before 0.4.7, github.com/ollama/ollama/issues/7881) or with ``index`` 0 for every call (Ollama,
  github.com/ollama/ollama/issues/15457): a delta with a new ``id`` starts a new call, one without ``id``
  continues the call its index names, or else the last call;
- a call's ``id`` and name on its first delta only, or a whole call (arguments complete) in one delta (GLM,
  Ollama);
- ``finish_reason`` "stop" although tool calls came (Ollama, github.com/ollama/ollama/pull/7963): the calls
  count;
- ``content`` as ``""`` or ``null`` next to tool calls;
- the usage in a last chunk with empty ``choices`` (OpenAI's ``include_usage``), on the chunk with the
  ``finish_reason`` (GLM), inside ``choices[0]`` (Kimi), or nowhere (an estimate then);
- reasoning (``reasoning_content`` or ``reasoning``) streamed before the content.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.engine.completion import (
    ChatResponse,
    ToolCallRequest,
    Usage,
    chunk_usage,
    estimated_usage,
)

_REASONING_TEXT = ("reasoning_content", "reasoning")


@dataclass(slots=True)
class _Call:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class StreamAssembly:
    """Folds the chunks of one streamed completion, in order, into the :class:`ChatResponse` they make."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._saw_content = False
        self._reasoning: dict[str, list[str]] = {}
        self._details: list[Any] = []
        self._calls: list[_Call] = []
        self._by_index: dict[int, _Call] = {}
        self._finish: str | None = None
        self._model: str | None = None
        self._usage: Usage | None = None

    def add(self, chunk: dict[str, Any]) -> str | None:
        """Fold one chunk in; returns its content delta, if any. Raises ``ValueError`` for a wrong shape."""
        if isinstance(chunk.get("model"), str):
            self._model = chunk["model"]
        usage = chunk_usage(chunk)
        if usage is not None:
            self._usage = usage
        choices = chunk.get("choices")
        if not choices:
            return None
        if not isinstance(choices, list) or not isinstance(choices[0], dict):
            raise ValueError("a chunk's choices are not a list of objects")
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self._finish = choice["finish_reason"]
        delta = choice.get("delta")
        if delta is None:
            return None
        if not isinstance(delta, dict):
            raise ValueError("a chunk's delta is not an object")
        for key in _REASONING_TEXT:
            if isinstance(delta.get(key), str):
                self._reasoning.setdefault(key, []).append(delta[key])
        if isinstance(delta.get("reasoning_details"), list):
            self._details.extend(delta["reasoning_details"])
        calls = delta.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise ValueError("a delta's tool_calls are not a list")
            for call in calls:
                self._add_call(call)
        content = delta.get("content")
        if content is None:
            return None
        if not isinstance(content, str):
            raise ValueError("a chunk's delta content is not a string")
        self._saw_content = True
        if content:
            self._content.append(content)
        return content or None

    def _add_call(self, delta: Any) -> None:
        if not isinstance(delta, dict):
            raise ValueError("a tool-call delta is not an object")
        if delta.get("type") not in (None, "function"):
            return  # custom (non-function) tool calls are not part of the contract
        function = delta.get("function") or {}
        if not isinstance(function, dict):
            raise ValueError("a tool-call delta's function is not an object")
        call_id, index = delta.get("id"), delta.get("index")
        if call_id is not None and not isinstance(call_id, str):
            raise ValueError("a tool call's id is not a string")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)):
            raise ValueError("a tool call's index is not an integer")
        call = self._call_for(call_id or None, index)
        name, arguments = function.get("name"), function.get("arguments")
        if name is not None:
            if not isinstance(name, str):
                raise ValueError("a tool call's function name is not a string")
            if not call.name:
                call.name = name
        if arguments is not None:
            if not isinstance(arguments, str):
                raise ValueError("a tool call's arguments are not a JSON string")
            call.arguments.append(arguments)

    def _call_for(self, call_id: str | None, index: int | None) -> _Call:
        """The call a delta belongs to: by its id, else by its index, else the last one (or a new one)."""
        if call_id is not None:
            for call in self._calls:
                if call.id == call_id:
                    return call
            known = self._by_index.get(index) if index is not None else None
            if known is not None and known.id is None:
                known.id = call_id  # the id came after the call's first delta
                return known
            return self._start(call_id, index)
        if index is not None and index in self._by_index:
            return self._by_index[index]
        if index is None and self._calls:
            return self._calls[-1]
        return self._start(None, index)

    def _start(self, call_id: str | None, index: int | None) -> _Call:
        call = _Call(id=call_id)
        self._calls.append(call)
        if index is not None:
            self._by_index[index] = call  # a reused index now names the newest call
        return call

    def response(self, sent: Sequence[dict[str, Any]]) -> ChatResponse:
        """The assembled reply; ``sent`` are the messages sent, for the usage estimate."""
        calls: list[ToolCallRequest] = []
        for number, call in enumerate(self._calls):
            if not call.name:
                raise ValueError("a streamed tool call has no function name")
            calls.append(ToolCallRequest(call.id or f"call_{number}", call.name, "".join(call.arguments)))
        content = "".join(self._content) if self._saw_content else None
        reasoning = {key: "".join(parts) for key, parts in self._reasoning.items()}
        fields: dict[str, Any] = dict(reasoning)
        if self._details:
            fields["reasoning_details"] = list(self._details)
        text = next((reasoning[key] for key in _REASONING_TEXT if key in reasoning), None)
        usage = self._usage or estimated_usage(
            sent, (text or "") + (content or "") + "".join(c.arguments for c in calls)
        )
        return ChatResponse(
            content=content,
            tool_calls=tuple(calls),
            reasoning_content=text,
            usage=usage,
            finish_reason=self._finish,
            model=self._model,
            reasoning_fields=fields or None,
        )


__all__ = ["StreamAssembly"]
