"""Structured output from any model: the spec's three-level degradation chain.

``structured_llm_call()`` is the single entry point for "ask the model for JSON matching this
schema" (planner, plan analyser, tool selection...). It tries, by the endpoint's abilities
(:mod:`agents.engine.abilities`):

1. native function calling (``tool_call``): a forced tool call (``forced_tool_choice``), one call. Without
   a forced choice the function is offered with ``tool_choice`` left out, and only when there is no JSON
   mode (it is then the best level left);
2. JSON mode (``response_format={"type": "json_object"}``; ``json_mode``), one call plus one retry with a
   reformat prompt; the messages always contain the word "json" (OpenAI and DashScope refuse them otherwise);
3. plain text (always), JSON extracted from free text (then ``regex_fallback``), one call plus
   one retry with a reformat prompt;

then returns ``default_value`` when given, else raises :class:`StructuredOutputError`. At most
5 calls (tool_call + json_mode), 4 (json_mode only) or 2 (plain text only).

An endpoint that answers a level's request with a 400 naming its field (``tool_choice``,
``response_format``) is recorded as refusing that ability for the LLM instance: the chain goes on at the
next level at once, and later calls skip the refused level (``StructuredCallResult.degraded`` says which).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, Literal, TypeVar, cast

import jsonschema

from agents.engine.abilities import FORCED_TOOL_CHOICE, JSON_MODE, TOOL_CALL, has, is_refusal, refuse
from agents.engine.llm import (
    LLM,
    ChatResponse,
    ContextLengthExceededError,
    EndpointMisconfiguredError,
    EndpointRefusedError,
    LLMError,
    Message,
    RateLimitedError,
    Usage,
)
from agents.engine.metering import CallPurpose, call_purpose
from agents.engine.prompts import with_json_word
from agents.engine.strict_json import StrictJSONError, loads_strict, raw_decode_strict
from agents.engine.text_tool_calls import find_text_tool_calls

logger = logging.getLogger(__name__)

T = TypeVar("T")

Level = Literal["native", "json_mode", "plain_text", "default"]

REFORMAT_PROMPT = (
    "Your previous response could not be parsed as valid JSON. Reply again with only one JSON "
    "object that conforms to the schema below: no prose, no markdown code fences."
)
SCHEMA_INSTRUCTION = (
    "Respond with only one JSON object that conforms to this JSON schema: no prose, no markdown code fences."
)
OFFERED_FUNCTION = "Give the result by calling the function `{name}` (one call), not as text."
_MAX_PROBLEM_CHARS = 300


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""Sentinel: no ``default_value`` was given."""


class StructuredOutputError(Exception):
    """Every level of the chain failed and no default was given."""

    def __init__(
        self, message: str, *, attempts: int, last_raw_text: str | None, last_error: Exception | None = None
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_raw_text = last_raw_text
        self.last_error = last_error


@dataclass(frozen=True)
class StructuredCallResult(Generic[T]):
    """The parsed value, the raw dict it came from, the level that produced it, the usage of
    every attempt and the number of LLM calls made."""

    value: T
    raw: dict[str, Any] | None
    level: Level
    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    degraded: tuple[str, ...] = ()
    """The abilities the endpoint refused during this call (the ladder went on without them)."""


class _Failure(Exception):
    """One attempt's output could not be turned into a value."""


@dataclass(frozen=True, slots=True)
class FoundJSON:
    """What :func:`find_json_object` found: the object, or ``None`` and, when strict JSON refused the
    reply (rather than finding no JSON in it), ``problem`` saying why."""

    value: dict[str, Any] | None
    problem: str = ""


def extract_json(text: str | None) -> dict[str, Any] | None:
    """The JSON object in free-form model output, or ``None`` (see :func:`find_json_object`)."""
    return find_json_object(text).value


def find_json_object(text: str | None) -> FoundJSON:
    """The strict JSON object in free-form model output.

    Tries, in order: the whole text, each fenced code block, then every ``{`` from the left
    (the first that starts a parseable object wins; braces inside strings and nested objects
    are handled by the JSON decoder). Trailing commas are forgiven. A top-level array is not
    an object: the scan may still find an object inside it. Decoding is strict
    (:mod:`agents.engine.strict_json`): a candidate holding ``NaN``, ``Infinity``, a key given twice or
    a lone surrogate ends the search with its ``problem``; a later object is never used in its place.
    """
    if not text or "{" not in text:
        return FoundJSON(None)
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE_RE.finditer(text)]
    for candidate in candidates:
        found = _loads_object(candidate)
        if found.value is not None or found.problem:
            return found
    start = text.find("{")
    while start != -1:
        try:
            value = raw_decode_strict(text, start)
        except StrictJSONError as exc:
            if exc.is_refusal:
                return FoundJSON(None, exc.reason)
            found = _loads_object(_balanced(text, start) or "")
            if found.value is not None or found.problem:
                return found
        else:
            if isinstance(value, dict):
                return FoundJSON(value)
        start = text.find("{", start + 1)
    return FoundJSON(None)


_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON|json5|javascript|js)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_TRAILING_COMMA_RE = re.compile(r",(\s*[}\]])")


def _loads_object(candidate: str) -> FoundJSON:
    if not candidate.startswith("{"):
        return FoundJSON(None)
    for attempt in (candidate, _TRAILING_COMMA_RE.sub(r"\1", candidate)):
        try:
            value = loads_strict(attempt)
        except StrictJSONError as exc:
            if exc.is_refusal:
                return FoundJSON(None, exc.reason)
            continue
        return FoundJSON(value if isinstance(value, dict) else None)
    return FoundJSON(None)


def _balanced(text: str, start: int) -> str | None:
    """The ``{...}`` span starting at ``start``, matching braces outside strings."""
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return None


async def structured_choice(
    llm: LLM,
    purpose: CallPurpose,
    system: str,
    user: str,
    *,
    schema: Mapping[str, Any],
    function_name: str,
    function_description: str,
) -> StructuredCallResult[dict[str, Any]]:
    """:func:`structured_llm_call` of a system prompt and one user message, metered as ``purpose``: the
    small choices the engine asks a model for (the execution mode, the relevant tools)."""
    messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with call_purpose(purpose):
        return await structured_llm_call(
            llm,
            messages,
            schema=schema,
            function_name=function_name,
            function_description=function_description,
        )


async def structured_llm_call(
    llm: LLM,
    messages: Sequence[Message],
    *,
    schema: Mapping[str, Any],
    function_name: str = "structured_output",
    function_description: str = "Return the result.",
    parse_fn: Callable[[dict[str, Any]], T] | None = None,
    default_value: T | Any = MISSING,
    regex_fallback: Callable[[str], dict[str, Any] | None] | None = None,
    temperature: float | None = 0.0,
    validate_schema: bool = True,
) -> StructuredCallResult[T]:
    """Get a value matching ``schema`` from ``llm`` through the three-level chain.

    The raw dict is validated against ``schema`` (unless ``validate_schema=False``) and
    passed to ``parse_fn``; a validation error or a ``parse_fn`` exception fails the attempt
    like unparseable output does. An :class:`LLMError` fails the attempt too.
    """
    call = _Chain(llm, messages, schema, parse_fn, regex_fallback, temperature, validate_schema)
    result = await _ladder(call, llm, schema, function_name, function_description)
    if result is not None:
        return result

    if default_value is not MISSING:
        logger.info("structured_llm_call fell back to its default after %d attempts", call.attempts)
        return StructuredCallResult(
            default_value, None, "default", call.usage, call.attempts, tuple(call.degraded)
        )
    why = (
        f"the endpoint cannot answer ({call.last_error})"
        if call.stopped
        else "no level produced a valid JSON object"
    )
    raise StructuredOutputError(
        f"{why} after {call.attempts} LLM call(s)",
        attempts=call.attempts,
        last_raw_text=call.last_raw_text,
        last_error=call.last_error,
    ) from call.last_error


async def _ladder(
    call: _Chain[T], llm: LLM, schema: Mapping[str, Any], function_name: str, function_description: str
) -> StructuredCallResult[T] | None:
    """The levels in order, by the endpoint's abilities; the first result, or ``None``."""
    if has(llm, TOOL_CALL):
        tool = {
            "type": "function",
            "function": {
                "name": function_name,
                "description": function_description,
                "parameters": dict(schema),
            },
        }
        result: StructuredCallResult[Any] | None = None
        if has(llm, FORCED_TOOL_CHOICE):
            forced = {"type": "function", "function": {"name": function_name}}
            result = await call.attempt(
                "native", tools=[tool], tool_choice=forced, function_name=function_name
            )
            error = call.last_error
            if result is None and error is not None and is_refusal(error, FORCED_TOOL_CHOICE):
                refuse(llm, FORCED_TOOL_CHOICE, call.last_error)
                call.degraded.append(FORCED_TOOL_CHOICE)
        elif not has(llm, JSON_MODE):
            # Without a forced choice the function is only offered: JSON mode, when there is one, is surer.
            result = await call.attempt("native", tools=[tool], function_name=function_name, offered=True)
        if result is not None:
            return result

    if has(llm, JSON_MODE):
        json_object = {"type": "json_object"}
        result = await call.attempt("json_mode", response_format=json_object)
        error = call.last_error
        if result is None and error is not None and is_refusal(error, JSON_MODE):
            refuse(llm, JSON_MODE, call.last_error)
            call.degraded.append(JSON_MODE)
        elif result is None:
            result = await call.attempt("json_mode", response_format=json_object, reformat=True)
        if result is not None:
            return result

    result = await call.attempt("plain_text")
    if result is None:
        result = await call.attempt("plain_text", reformat=True)
    return result


class _Chain(Generic[T]):
    """The state shared by the attempts of one ``structured_llm_call``."""

    def __init__(
        self,
        llm: LLM,
        messages: Sequence[Message],
        schema: Mapping[str, Any],
        parse_fn: Callable[[dict[str, Any]], T] | None,
        regex_fallback: Callable[[str], dict[str, Any] | None] | None,
        temperature: float | None,
        validate_schema: bool,
    ) -> None:
        self.llm = llm
        self.messages = list(messages)
        self.schema_text = json.dumps(schema, ensure_ascii=False, sort_keys=True)
        self.validator = _validator(self.schema_text) if validate_schema else None
        self.parse_fn = parse_fn
        self.regex_fallback = regex_fallback
        self.temperature = temperature
        self.usage = Usage()
        self.attempts = 0
        self.last_raw_text: str | None = None
        self.previous_output: str | None = None  # what the reformat retry shows the model
        self.last_error: Exception | None = None
        self.last_problem = ""
        self.degraded: list[str] = []
        # The endpoint failed in a way no level avoids (rate limited, prompt too long, misconfigured):
        # the remaining attempts make no call.
        self.stopped = False

    async def attempt(
        self,
        level: Level,
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: dict[str, Any] | None = None,
        response_format: dict[str, Any] | None = None,
        function_name: str | None = None,
        reformat: bool = False,
        offered: bool = False,
    ) -> StructuredCallResult[T] | None:
        if self.stopped:
            return None
        if level == "native":
            messages = self._offering(function_name) if offered else self.messages
        else:
            messages = self._with_schema(reformat)
        if response_format is not None:
            messages = with_json_word(messages)
        self.previous_output = None
        self.attempts += 1
        try:
            response = await self.llm.chat(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                response_format=response_format,
                temperature=self.temperature,
            )
        except LLMError as exc:
            self.last_error = exc
            self.last_problem = ""
            logger.warning("structured_llm_call: %s attempt failed: %s", level, type(exc).__name__)
            self.stopped = _ends_the_chain(exc)
            return None
        self.usage.add(response.usage)
        try:
            raw = self._raw(level, response, function_name)
            value = self._value(raw)
        except _Failure as exc:
            self.last_error = exc
            self.last_problem = str(exc)[:_MAX_PROBLEM_CHARS]
            logger.info("structured_llm_call: %s attempt unusable, degrading", level)
            return None
        return StructuredCallResult(value, raw, level, self.usage, self.attempts, tuple(self.degraded))

    def _raw(self, level: Level, response: ChatResponse, function_name: str | None) -> dict[str, Any]:
        if level == "native":
            calls = [c for c in response.tool_calls if c.name == function_name] or list(response.tool_calls)
            if not calls and function_name:  # an endpoint without a tool parser writes the call as text
                calls = list(find_text_tool_calls(response.content, {function_name}, id_prefix="text_").calls)
            if not calls:
                self._saw(response.content)
                raise _Failure("the model did not call the function")
            self._saw(calls[0].arguments)
            return _decode_arguments(calls[0].arguments)
        text = response.content or ""
        self._saw(text)
        found = find_json_object(text)
        if found.problem:
            raise _Failure(f"the JSON is not strict JSON: {found.problem}")
        raw = found.value
        if raw is None and level == "plain_text" and self.regex_fallback is not None:
            try:
                raw = self.regex_fallback(text)
            except Exception as exc:  # a caller's fallback must not break the chain
                raise _Failure(f"regex_fallback raised {type(exc).__name__}") from exc
        if raw is None:
            raise _Failure("no JSON object found in the response")
        return raw

    def _saw(self, text: str | None) -> None:
        self.previous_output = text
        if text is not None:
            self.last_raw_text = text

    def _value(self, raw: dict[str, Any]) -> T:
        if self.validator is not None:
            problem = next(iter(self.validator.iter_errors(raw)), None)
            if problem is not None:
                raise _Failure(f"the JSON does not match the schema: {problem.message}")
        if self.parse_fn is None:
            return cast(T, raw)  # no parse_fn: the caller asked for the dict itself
        try:
            return self.parse_fn(raw)
        except Exception as exc:  # parse_fn is the caller's validation: any failure degrades
            raise _Failure(f"the JSON was rejected: {type(exc).__name__}: {exc}") from exc

    def _offering(self, function_name: str | None) -> list[Message]:
        """The conversation with a request to call the function (offered, not forced)."""
        return _with_system_note(self.messages, OFFERED_FUNCTION.format(name=function_name))

    def _with_schema(self, reformat: bool) -> list[Message]:
        """The conversation with the schema instruction (and, on a retry, the reformat request)."""
        messages = _with_system_note(self.messages, f"{SCHEMA_INSTRUCTION}\n{self.schema_text}")
        if reformat and self.previous_output is not None:
            request = REFORMAT_PROMPT
            if self.last_problem:
                request += f"\nProblem: {self.last_problem}"
            request += f"\nSchema:\n{self.schema_text}"
            messages.append({"role": "assistant", "content": self.previous_output})
            messages.append({"role": "user", "content": request})
        return messages


def _ends_the_chain(error: LLMError) -> bool:
    """Whether every other level would fail the same way: a prompt too long for the context window, a rate
    limit (HTTP 429, after the client's retries), an endpoint refused by the connect guard or misconfigured."""
    ending = (ContextLengthExceededError, RateLimitedError, EndpointRefusedError, EndpointMisconfiguredError)
    return isinstance(error, ending) or error.status_code == 429


def _with_system_note(messages: Sequence[Message], note: str) -> list[Message]:
    """``messages`` with ``note`` at the end of the system prompt (a new one when there is none)."""
    out = list(messages)
    if out and out[0].get("role") == "system" and isinstance(out[0].get("content"), str):
        out[0] = {**out[0], "content": f"{out[0]['content']}\n\n{note}"}
    else:
        out.insert(0, {"role": "system", "content": note})
    return out


def _decode_arguments(arguments: str) -> dict[str, Any]:
    try:
        value: Any = loads_strict(arguments) if arguments.strip() else {}
        if isinstance(value, str):  # some providers double-encode the arguments
            value = loads_strict(value)
    except StrictJSONError as exc:
        found = FoundJSON(None, exc.reason) if exc.is_refusal else find_json_object(arguments)
        if found.problem:
            raise _Failure(f"the function arguments are not strict JSON: {found.problem}") from None
        value = found.value
    if not isinstance(value, dict):
        raise _Failure("the function arguments are not a JSON object")
    return value


@lru_cache(maxsize=128)
def _validator(schema_text: str) -> Any:
    schema = json.loads(schema_text)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)
