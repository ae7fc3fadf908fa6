""" "Check endpoint": a few small live requests that tell what a model endpoint really does.

The requests go through the client the runs use (``agents.runtime.llm_for``: the same SDK client, the
SSRF guard on every connection, the extra headers, the Azure key header and api-version), in this order:

1. ``GET {base}/models``: verifies the key (401/403: "key refused") and finds the model in the list;
   a 404 (or any server without the listing) is tolerated, the chat probe confirms the model then.
2. A plain chat: confirms key and model; a 400 saying the model answers streamed requests only (DashScope's
   Qwen3 open-source models thinking) makes every later probe stream.
3. A tool call, a forced tool choice ("required" and a named function), a parallel pair of calls.
4. JSON mode (``response_format`` json_object, the prompt naming JSON as OpenAI and DeepSeek require).
5. A streamed answer with its usage.
6. An image (a small red square, sent as a ``data:`` URL): the model that names its colour sees
   (``vision``); a refusal or an answer that does not name it means it does not.
7. Whether any reply carried reasoning.

Each probe ends as a :class:`ProbeOutcome`: ``works``, ``refused`` (with the provider's message, or what
the reply did instead) or ``not_checked`` (an earlier step failed, or nothing to check). The whole check is
bounded by :data:`CHECK_SECONDS`. An endpoint the SSRF guard refuses is reported as such and nothing is sent.
``reasoning_replay`` is reported on only when the replies carry reasoning (thinking models take it back; see ``agents.engine.reasoning``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import struct
import time
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypedDict

import httpx2
import openai
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.endpoint_check_report import PROBES, EndpointCheckReport, ProbeOutcome, ProbeStatus
from agents.engine.llm import (
    ChatResponse,
    EndpointMisconfiguredError,
    EndpointRefusedError,
    LLMError,
    OpenAICompatibleLLM,
    Usage,
)
from agents.engine.text_tool_calls import find_text_tool_calls

CHECK_SECONDS = 60.0
"""The longest a whole check may take."""
PROBE_SECONDS = 20.0
"""The longest one request may take (less when the endpoint's own timeout is shorter)."""

_ECHO_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "echo_word",
        "description": "Echo a word back. Used to test function calling.",
        "parameters": {
            "type": "object",
            "properties": {"word": {"type": "string", "description": "the word to echo"}},
            "required": ["word"],
        },
    },
}
_TOOL_NAMES = ("echo_word",)
_SAY_OK = [{"role": "user", "content": "Reply with the single word OK."}]
_CALL_ONCE = [{"role": "user", "content": "Call the function echo_word once with the word 'ping'."}]
_CALL_TWICE = [
    {
        "role": "user",
        "content": "In one reply, call the function echo_word twice: once with the word 'ping' and once "
        "with the word 'pong'.",
    }
]
_JSON = [{"role": "user", "content": 'Answer with this JSON object and nothing else: {"ok": true}'}]


def _red_square_png(size: int = 64) -> bytes:
    """A PNG of one red square (8-bit RGB), written out here: one fixed image needs no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * size for _ in range(size))
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


_RED_SQUARE = "data:image/png;base64," + base64.b64encode(_red_square_png()).decode("ascii")
_SEE = [
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What colour is this image? Answer with one word."},
            {"type": "image_url", "image_url": {"url": _RED_SQUARE}},
        ],
    }
]
_RED_WORDS = ("red", "红")


class ProbeAbilities(TypedDict):
    """The abilities the checked endpoint's client is built with (``check_llm``'s ``build`` argument): each
    a field of the endpoint (``agents.runtime.ModelEndpoint``)."""

    tool_call: bool
    parallel_tool_calls: bool
    forced_tool_choice: bool
    json_mode: bool
    stream_only: bool


@dataclass
class _Run:
    """The state of a check in progress."""

    llm: OpenAICompatibleLLM
    model: str
    build: Callable[[ProbeAbilities], OpenAICompatibleLLM]
    deadline: float
    outcomes: dict[str, ProbeOutcome] = field(default_factory=dict)
    abilities: dict[str, bool] = field(default_factory=dict)
    key_verified: bool | None = None
    model_found: bool | None = None
    reasoning_seen: bool = False

    def set(self, probe: str, status: ProbeStatus, message: str = "") -> None:
        self.outcomes[probe] = ProbeOutcome(probe, status, message[:500])

    def skip_rest(self, why: str) -> None:
        for probe in PROBES:
            self.outcomes.setdefault(probe, ProbeOutcome(probe, "not_checked", why))

    async def within(self, call: Awaitable[Any]) -> Any:
        """``call``, given what is left of the check's time (and at most one probe's)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        async with asyncio.timeout(min(left, PROBE_SECONDS)):
            return await call


class _Stop(Exception):
    """The check cannot go on (key refused, model missing, endpoint refused, out of time)."""


class _Undecided(Exception):
    """A probe failed for a reason that says nothing of the ability (a rate limit, a server error, a
    dropped connection): its outcome is "not checked" and the ability is left as it is."""


def _undecided_or_refused(exc: LLMError) -> str:
    """The refusal's message; raises :class:`_Undecided` (or the guard's refusal) when it is no refusal."""
    if isinstance(exc, EndpointRefusedError):
        raise exc
    status = exc.status_code
    if not isinstance(exc, EndpointMisconfiguredError) and (
        status is None or status in (408, 409, 429) or status >= 500
    ):
        raise _Undecided(_text(exc)) from exc
    return _text(exc)


async def check_llm(
    build: Callable[[ProbeAbilities], OpenAICompatibleLLM], *, model: str, seconds: float = CHECK_SECONDS
) -> EndpointCheckReport:
    """Probe the endpoint that ``build(abilities)`` returns an LLM for (the async core of the check).

    ``build`` is called with every ability on (and ``stream_only`` as found), so that nothing the engine
    would leave out is left out here.
    """
    started = time.monotonic()
    run = _Run(llm=build(_ALL_ON), model=model, build=build, deadline=started + seconds)
    refused = ""
    try:
        await _models(run)
        await _chat(run)
        await _tools(run)
        await _json_mode(run)
        await _streaming(run)
        await _vision(run)
        _reasoning(run)
    except EndpointRefusedError as exc:
        refused = str(exc)
        run.skip_rest(_("The SSRF guard refused the endpoint: nothing was sent."))
    except TimeoutError:
        run.skip_rest(_("The check ran out of time."))
    except _Stop as stop:
        run.skip_rest(str(stop))
    run.skip_rest(_("Not checked."))
    return EndpointCheckReport(
        checked_at=timezone.now(),
        elapsed=time.monotonic() - started,
        probes=tuple(run.outcomes[p] for p in PROBES),
        abilities=run.abilities,
        key_verified=run.key_verified,
        model_found=run.model_found,
        refused_by_guard=refused,
    )


_ALL_ON: ProbeAbilities = {
    "tool_call": True,
    "parallel_tool_calls": True,
    "forced_tool_choice": True,
    "json_mode": True,
    "stream_only": False,
}


# --- the probes -------------------------------------------------------------------------------


async def _models(run: _Run) -> None:
    try:
        response = await run.within(
            run.llm.client().get("/models", cast_to=httpx2.Response, options=run.llm.request_options())
        )
    except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
        run.key_verified = False
        run.set("models", "refused", _("Key refused: %(message)s") % {"message": _message(exc)})
        raise _Stop(_("The key was refused.")) from exc
    except openai.APIStatusError as exc:  # 404, 405, 501...: no listing here; the chat confirms the model
        run.set("models", "not_checked", _("No model list (HTTP %(status)s).") % {"status": exc.status_code})
        return
    except openai.APIConnectionError as exc:
        if isinstance(exc.__cause__, EndpointRefusedError):
            raise exc.__cause__ from exc
        run.set("models", "refused", _connection_failure(exc))
        raise _Stop(_("The endpoint cannot be reached.")) from exc
    run.key_verified = True
    listed = _listed_models(response.content)
    if listed is None:
        run.set("models", "not_checked", _("The model list could not be read."))
    elif run.model in listed:
        run.model_found = True
        run.set("models", "works", _("The model is listed."))
    else:
        run.set(
            "models",
            "refused",
            _("“%(model)s” is not among the %(count)d models listed.")
            % {"model": run.model, "count": len(listed)},
        )


def _listed_models(body: bytes) -> set[str] | None:
    try:
        data = json.loads(body).get("data")
        return {str(item["id"]) for item in data}
    except (ValueError, AttributeError, TypeError, KeyError):
        return None


async def _chat(run: _Run) -> None:
    try:
        response = await run.within(run.llm.chat(_SAY_OK))
    except LLMError as exc:
        if _stream_only_refusal(exc):
            run.abilities["stream_only"] = True
            run.llm = run.build({**_ALL_ON, "stream_only": True})
            try:
                response = await run.within(run.llm.chat(_SAY_OK))
            except LLMError as again:
                _chat_failed(run, again)
            run.set(
                "chat", "works", _("Answers streamed requests only: %(message)s") % {"message": _text(exc)}
            )
            _answered(run, response)
            return
        _chat_failed(run, exc)
    run.abilities["stream_only"] = False
    run.set("chat", "works")
    _answered(run, response)


def _answered(run: _Run, response: ChatResponse) -> None:
    run.key_verified = True
    run.model_found = True  # it answered (a provider may list its models under other names)
    run.reasoning_seen |= bool(response.reasoning_content)


def _chat_failed(run: _Run, exc: LLMError) -> None:
    status = exc.status_code
    if isinstance(exc, EndpointRefusedError):
        raise exc
    if status in (401, 403):
        run.key_verified = False
        run.set("chat", "refused", _("Key refused: %(message)s") % {"message": _text(exc)})
        raise _Stop(_("The key was refused.")) from exc
    if status == 404:
        run.model_found = False
        run.set("chat", "refused", _("Model not found: %(message)s") % {"message": _text(exc)})
        raise _Stop(_("The model was not found.")) from exc
    run.set("chat", "refused", _text(exc))
    raise _Stop(_("A plain chat request failed.")) from exc


async def _tools(run: _Run) -> None:
    try:
        outcome = await _call(run, _CALL_ONCE)
    except _Undecided as undecided:
        for probe in ("tool_call", "forced_tool_choice", "parallel_tool_calls"):
            run.set(probe, "not_checked", str(undecided))
        return
    if isinstance(outcome, str):
        run.abilities.update(tool_call=False, parallel_tool_calls=False, forced_tool_choice=False)
        run.set("tool_call", "refused", outcome)
        why = _("Needs function calling.")
        run.set("forced_tool_choice", "not_checked", why)
        run.set("parallel_tool_calls", "not_checked", why)
        return
    run.abilities["tool_call"] = True
    run.set("tool_call", "works")

    await _forced_tool_choice(run)
    try:
        pair = await _call(run, _CALL_TWICE)
    except _Undecided as undecided:
        run.set("parallel_tool_calls", "not_checked", str(undecided))
        return
    if isinstance(pair, str):
        run.abilities["parallel_tool_calls"] = False
        run.set("parallel_tool_calls", "refused", pair)
    elif len(pair.tool_calls) < 2:
        run.abilities["parallel_tool_calls"] = False
        run.set("parallel_tool_calls", "refused", _("Asked for two calls, the reply had one."))
    else:
        run.abilities["parallel_tool_calls"] = True
        run.set("parallel_tool_calls", "works")


async def _forced_tool_choice(run: _Run) -> None:
    forced: list[str] = []
    try:
        for choice in ("required", {"type": "function", "function": {"name": "echo_word"}}):
            result = await _call(run, _SAY_OK, tool_choice=choice)
            if isinstance(result, str):
                forced.append(result)
    except _Undecided as undecided:
        run.set("forced_tool_choice", "not_checked", str(undecided))
        return
    run.abilities["forced_tool_choice"] = not forced
    if forced:
        run.set("forced_tool_choice", "refused", forced[0])
    else:
        run.set("forced_tool_choice", "works")


async def _call(run: _Run, messages: list[dict[str, Any]], *, tool_choice: Any = None) -> ChatResponse | str:
    """The reply with tool calls, or why there is none (the provider's refusal, text instead of a call)."""
    try:
        response: ChatResponse = await run.within(
            run.llm.chat(messages, tools=[_ECHO_TOOL], tool_choice=tool_choice)
        )
    except LLMError as exc:
        return _undecided_or_refused(exc)
    run.reasoning_seen |= bool(response.reasoning_content)
    if response.tool_calls:
        return response
    if find_text_tool_calls(response.content, _TOOL_NAMES, id_prefix="check_").calls:
        return _("The tool call came back as text in the content (the server parses no tool calls).")
    return _("The reply answered in text without calling the function.")


def _failed(run: _Run, probe: str, exc: LLMError, *, ability: str | None = None) -> None:
    """``probe`` failed with ``exc``: not checked when the error decides nothing, else refused (and
    ``ability``, if given, off)."""
    try:
        refusal = _undecided_or_refused(exc)
    except _Undecided as undecided:
        run.set(probe, "not_checked", str(undecided))
        return
    if ability is not None:
        run.abilities[ability] = False
    run.set(probe, "refused", refusal)


async def _json_mode(run: _Run) -> None:
    try:
        response = await run.within(run.llm.chat(_JSON, response_format={"type": "json_object"}))
    except LLMError as exc:
        _failed(run, "json_mode", exc, ability="json_mode")
        return
    run.reasoning_seen |= bool(response.reasoning_content)
    try:
        parsed = json.loads(response.content or "")
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        run.abilities["json_mode"] = True
        run.set("json_mode", "works")
    else:
        run.abilities["json_mode"] = False
        run.set("json_mode", "refused", _("The reply is not a JSON object."))


async def _vision(run: _Run) -> None:
    try:
        response = await run.within(run.llm.chat(_SEE))
    except LLMError as exc:
        _failed(run, "vision", exc, ability="vision")
        return
    run.reasoning_seen |= bool(response.reasoning_content)
    reply = (response.content or "").strip()
    if any(word in reply.lower() for word in _RED_WORDS):
        run.abilities["vision"] = True
        run.set("vision", "works")
    else:
        run.abilities["vision"] = False
        run.set(
            "vision",
            "refused",
            _("Shown a red square, the reply did not name its colour: %(reply)s") % {"reply": reply[:200]},
        )


async def _streaming(run: _Run) -> None:
    usage = Usage()
    pieces: list[str] = []

    async def read() -> None:
        async for delta in run.llm.stream_chat(_SAY_OK, usage=usage):
            pieces.append(delta)

    try:
        await run.within(read())
    except LLMError as exc:
        _failed(run, "streaming", exc)
        return
    if not "".join(pieces).strip():
        run.set("streaming", "refused", _("The stream carried no answer."))
        return
    run.set(
        "streaming",
        "works",
        _("%(chunks)d chunks; usage: %(prompt)d prompt and %(completion)d completion tokens.")
        % {"chunks": len(pieces), "prompt": usage.prompt_tokens, "completion": usage.completion_tokens},
    )


def _reasoning(run: _Run) -> None:
    run.abilities["reasoning_output"] = run.reasoning_seen
    if run.reasoning_seen:
        run.abilities["reasoning_replay"] = True
        run.set("reasoning", "works", _("The replies carry the model's reasoning."))
    else:
        run.set("reasoning", "refused", _("No reply carried reasoning."))


# --- messages ---------------------------------------------------------------------------------

_STREAM_ONLY_WORDS = ("stream", "incremental")


def _stream_only_refusal(exc: LLMError) -> bool:
    """A 400 that says the model answers streamed requests only (DashScope: "This model only support stream
    mode, please enable the stream parameter to access the model.")."""
    text = str(exc).lower()
    return (
        exc.status_code in (400, None) and any(word in text for word in _STREAM_ONLY_WORDS) and "only" in text
    )


def _text(exc: BaseException) -> str:
    return str(exc)[:500]


def _connection_failure(exc: openai.APIConnectionError) -> str:
    """What a request that got no answer means. The SDK's aiohttp transport reports a connection that
    could not be made (refused, unreachable) as a connect timeout, whatever the time it took."""
    if isinstance(exc, openai.APITimeoutError) and not isinstance(exc.__cause__, httpx2.ConnectTimeout):
        return _("No answer in time: the endpoint accepted the connection but did not reply.")
    return _("Cannot be reached: the connection was refused or nothing answers at that address.")


def _message(exc: BaseException) -> str:
    return (getattr(exc, "message", None) or str(exc))[:500]


__all__ = ["CHECK_SECONDS", "PROBES", "EndpointCheckReport", "ProbeOutcome", "check_llm"]
