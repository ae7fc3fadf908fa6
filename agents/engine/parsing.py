"""Turning model output into actions: JSON-mode replies and native tool calls."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.engine.llm import ToolCallRequest
from agents.engine.prompts import PARSE_FAILURE_SENTINEL
from agents.engine.strict_json import StrictJSONError, loads_strict
from agents.engine.structured import find_json_object

TOOL_CALL = "tool_call"
FINAL_ANSWER = "final_answer"

_TOOL_TYPES = frozenset({"tool_call", "tool", "call_tool", "tool_use", "function_call"})
_FINAL_TYPES = frozenset({"final_answer", "answer", "final", "finish", "done"})


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """One JSON-mode action. A reply that is not a usable action parses as a ``final_answer`` whose
    reasoning is :data:`PARSE_FAILURE_SENTINEL` and whose answer is the raw content; ``problem`` then says
    what strict JSON refused in it (empty when it was simply not JSON)."""

    kind: str
    reasoning: str
    tool_name: str = ""
    tool_args: Any = None
    answer: str = ""
    problem: str = ""

    @property
    def parse_failed(self) -> bool:
        return self.reasoning == PARSE_FAILURE_SENTINEL


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call ready to run: arguments decoded, or ``args_error`` saying why they could not be."""

    id: str
    name: str
    args: Mapping[str, Any]
    args_error: str | None = None


def _failure(content: str | None, problem: str = "") -> ParsedAction:
    return ParsedAction(FINAL_ANSWER, PARSE_FAILURE_SENTINEL, answer=content or "", problem=problem)


def _first(mapping: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        value = mapping.get(key)
        if value is not None:
            return value
    return None


def parse_action(content: str | None, reasoning_content: str | None = None) -> ParsedAction:
    """Parse a JSON-mode reply. ``reasoning_content`` (DeepSeek R1 style) fills an empty ``reasoning``."""
    found = find_json_object(content)
    data = found.value
    if data is None:
        return _failure(content, found.problem)
    reasoning = _first(data, "reasoning", "thought", "thinking")
    if not isinstance(reasoning, str) or not reasoning.strip():
        reasoning = reasoning_content or ""
    action = data.get("action")
    if isinstance(action, Mapping):
        kind, fields = action.get("type"), action
    else:
        kind, fields = action, data
    if not isinstance(kind, str) or not kind:
        if _first(fields, "tool_name", "tool", "name") is not None:
            kind = TOOL_CALL
        elif _first(fields, "answer", "final_answer") is not None:
            kind = FINAL_ANSWER
    kind = kind.lower() if isinstance(kind, str) else ""
    if kind in _TOOL_TYPES:
        name = _first(fields, "tool_name", "tool", "name")
        if not isinstance(name, str) or not name:
            return _failure(content)
        args = _first(fields, "tool_args", "arguments", "args", "parameters", "input")
        return ParsedAction(TOOL_CALL, reasoning, tool_name=name, tool_args={} if args is None else args)
    if kind in _FINAL_TYPES:
        answer = _first(fields, "answer", "final_answer", "content", "text")
        if answer is None:
            return _failure(content)
        if not isinstance(answer, str):
            answer = json.dumps(answer, ensure_ascii=False)
        return ParsedAction(FINAL_ANSWER, reasoning, answer=answer)
    return _failure(content)


def decode_arguments(raw: Any) -> tuple[Mapping[str, Any], str | None]:
    """Arguments as a mapping, or ``({}, reason)`` when they are not a strict JSON object.

    A string is decoded by :func:`~agents.engine.strict_json.loads_strict`: ``NaN``, ``Infinity``, a key
    given twice and anything after the object are refused, so the call does not run and the model is told
    why, instead of a guard rail judging a value the tool would read differently.
    """
    if isinstance(raw, Mapping):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if isinstance(raw, str):
        try:
            value = loads_strict(raw)
        except StrictJSONError as exc:
            return {}, f"the arguments are not valid JSON ({exc.reason})"
        if isinstance(value, Mapping):
            return value, None
        return {}, f"the arguments must be a JSON object, got {type(value).__name__}"
    return {}, f"the arguments must be a JSON object, got {type(raw).__name__}"


def native_tool_call(request: ToolCallRequest) -> ToolCall:
    """A provider tool call, its JSON arguments decoded."""
    args, error = decode_arguments(request.arguments)
    return ToolCall(request.id, request.name, args, error)


def json_tool_call(action: ParsedAction, call_id: str) -> ToolCall:
    """A JSON-mode tool call action, with a synthetic id."""
    args, error = decode_arguments(action.tool_args)
    return ToolCall(call_id, action.tool_name, args, error)
