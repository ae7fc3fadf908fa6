"""Tool calls a model wrote as text: what an endpoint without a tool parser returns in ``content``.

vLLM and SGLang turn the model's own tool-call text into ``tool_calls`` only when started with a tool
parser (vLLM: ``--enable-auto-tool-choice --tool-call-parser <name>``); without one the text is the reply.
The shapes, as vLLM's tool-calling documentation gives them per parser
(https://docs.vllm.ai/en/latest/features/tool_calling.html):

- Hermes / Qwen (``hermes``): ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, once per call;
- Llama 3 JSON (``llama3_json``): the bare object ``{"name": ..., "parameters": {...}}`` (``<|python_tag|>``
  may precede it);
- Mistral (``mistral``): ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]``.

Ollama's models answer with the same text when their template has no tool support
(https://docs.ollama.com/capabilities/tool-calling).

Recognition is strict: the whole reply must be such calls (whitespace aside; Hermes calls may follow some
text, which stays the reply's content), each decoded by
:mod:`agents.engine.strict_json`, each naming a registered tool, its arguments an object. A bare JSON object
naming no registered tool is an answer (the user may have asked for JSON). A reply that carries a tool-call
marker (``<tool_call>``, ``[TOOL_CALLS]``, ``<|python_tag|>``) but is not such calls is a failed tool call:
:attr:`TextToolCalls.broken` says why, and the engine fails with the endpoint's misconfiguration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from agents.engine.llm import ToolCallRequest
from agents.engine.strict_json import StrictJSONError, loads_strict

_HERMES_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_MARKERS = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
_MISTRAL_PREFIX = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"


@dataclass(frozen=True, slots=True)
class TextToolCalls:
    """What a reply's text holds: ``calls`` (recognised, to run), or ``broken`` (a marker is there but the
    reply is not well-formed calls of registered tools: why), or neither (the reply is an answer)."""

    calls: tuple[ToolCallRequest, ...] = ()
    broken: str = ""
    content: str = ""
    """The text before the calls (a model may say what it is about to do, as vLLM's Hermes parser allows)."""


NONE = TextToolCalls()


def find_text_tool_calls(
    content: str | None, tool_names: Collection[str], *, id_prefix: str
) -> TextToolCalls:
    """The tool calls written as text in ``content`` (see the module docstring); ids are ``{id_prefix}{n}``."""
    if not content or not tool_names:
        return NONE
    text = content.strip()
    marked = any(marker in text for marker in _MARKERS)
    before = ""
    if "<tool_call>" in text:
        before, tag, calls_text = text.partition("<tool_call>")
        calls_text = tag + calls_text
        spans = _HERMES_RE.findall(calls_text)
        if not spans or _HERMES_RE.sub("", calls_text).strip():
            return TextToolCalls(broken="text follows the <tool_call> tags, or a tag is left open")
        found = _objects([_load(span) for span in spans])
    elif text.startswith(_MISTRAL_PREFIX):
        value = _load(text[len(_MISTRAL_PREFIX) :])
        found = _objects(value if isinstance(value, list) else [value])
    elif text.startswith("{") or text.startswith(_PYTHON_TAG):
        found = _objects([_load(text.removeprefix(_PYTHON_TAG))])
    else:
        found = None
    if found is None:
        return TextToolCalls(broken="the tool call written as text is not strict JSON") if marked else NONE
    calls: list[ToolCallRequest] = []
    for number, obj in enumerate(found, 1):
        named = _call(obj, tool_names)
        if named is None:
            break
        calls.append(ToolCallRequest(f"{id_prefix}{number}", *named))
    else:
        if calls:
            return TextToolCalls(tuple(calls), content=before.strip())
    if marked:
        return TextToolCalls(
            broken="the tool call written as text names no registered tool or has no arguments"
        )
    return NONE


def _load(text: str) -> Any:
    try:
        return loads_strict(text.strip())
    except StrictJSONError:
        return _INVALID


_INVALID = object()


def _objects(values: list[Any]) -> list[Mapping[str, Any]] | None:
    if not values or any(not isinstance(v, Mapping) for v in values):
        return None
    return values


def _call(obj: Mapping[str, Any], tool_names: Collection[str]) -> tuple[str, str] | None:
    """``(name, arguments as JSON text)`` when ``obj`` is exactly a call of a registered tool."""
    name = obj.get("name")
    if not isinstance(name, str) or name not in tool_names:
        return None
    keys = set(obj) - {"name"}
    if len(keys) != 1 or not keys <= {"arguments", "parameters"}:
        return None
    args = obj[keys.pop()]
    if isinstance(args, str):  # some templates double-encode the arguments
        try:
            args = loads_strict(args)
        except StrictJSONError:
            return None
    if not isinstance(args, Mapping):
        return None
    return name, json.dumps(args, ensure_ascii=False)


MISCONFIGURED_TOOL_PARSER = (
    "{endpoint} returns tool calls as text in the reply ({why}): enable the tool parser (vLLM "
    "--enable-auto-tool-choice --tool-call-parser ..., SGLang --tool-call-parser ...) or switch off "
    "'supports function calling' for this endpoint"
)

__all__ = [
    "MISCONFIGURED_TOOL_PARSER",
    "NONE",
    "TextToolCalls",
    "find_text_tool_calls",
]
