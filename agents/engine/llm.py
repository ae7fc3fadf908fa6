"""The LLM contract of the engine and its OpenAI-compatible implementation.

The engine talks to models only through the :class:`LLM` protocol. Messages are plain
OpenAI chat-completions dicts (``{"role": ..., "content": ...}``, assistant messages may
carry ``tool_calls``, tool messages carry ``tool_call_id``), so they can be sent to any
OpenAI-compatible endpoint without conversion.

Keys that begin with ``_`` (``_pinned``, ``_tokens``, ...) are engine metadata on a message:
every implementation strips them before a request leaves the process.

The reply's value types (:class:`ChatResponse`, :class:`ToolCallRequest`, :class:`Usage`) live
with their decoding in :mod:`agents.engine.completion` and are exported from here too.

Where the client may connect is decided by a :class:`ConnectGuard` the caller passes in (the platform
passes its SSRF guard): it checks every connection, redirect hops included, and pins the addresses it
checked, so the engine itself needs no knowledge of the platform's address rules.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import ssl
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import anyio
import httpx2
import openai

from agents.engine.completion import (
    ChatResponse,
    ToolCallRequest,
    Usage,
    chat_response,
    chunk_usage,
    delta_content,
    delta_reasoning,
    estimated_usage,
)
from agents.engine.endpoint_errors import misconfiguration, retry_after_seconds
from agents.engine.llm_client import (
    ConnectGuard,
    ConnectRefusal,
    aclose_shared_clients,
    get_shared_client,
)
from agents.engine.llm_errors import (
    ContextLengthExceededError,
    EndpointMisconfiguredError,
    EndpointRefusedError,
    FailureKind,
    LLMError,
    RateLimitedError,
)
from agents.engine.reasoning import reasoning_replay as _reasoning_replay
from agents.engine.reasoning import wire_messages
from agents.engine.request_options import chat_request_template, request_options_like
from agents.engine.sse import sse_events
from agents.engine.stream_assembly import StreamAssembly

__all__ = [
    "DEFAULT_ABILITIES",
    "LLM",
    "ChatResponse",
    "LLMWrapper",
    "ConnectGuard",
    "ConnectRefusal",
    "ContextLengthExceededError",
    "EndpointMisconfiguredError",
    "EndpointRefusedError",
    "LLMError",
    "Message",
    "OpenAICompatibleLLM",
    "RateLimitedError",
    "ToolCallRequest",
    "Usage",
    "aclose_shared_clients",
    "get_shared_client",
    "strip_metadata",
    "wire_json",
]

logger = logging.getLogger(__name__)

Message = dict[str, Any]


@runtime_checkable
class LLM(Protocol):
    """What the engine needs from a model endpoint."""

    # Read-only members: a wrapper (``MeteredLLM``, ``TracedLLM``) answers them from the LLM it wraps, and
    # no caller sets them through this protocol.
    @property
    def abilities(self) -> Mapping[str, bool]:
        """``{"tool_call": bool, "json_mode": bool}``."""
        ...

    @property
    def context_window(self) -> int: ...

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


class LLMWrapper:
    """The part every LLM wrapping another shares: its abilities, context window, model name and base URL
    are those of the LLM it wraps (``wrapped_llm``). A subclass says what a call does on the way."""

    def __init__(self, llm: LLM) -> None:
        self.wrapped_llm = llm

    @property
    def abilities(self) -> Mapping[str, bool]:
        return self.wrapped_llm.abilities

    @property
    def context_window(self) -> int:
        return self.wrapped_llm.context_window

    @property
    def model(self) -> str:
        name = getattr(self.wrapped_llm, "model", None)
        return name if isinstance(name, str) else type(self.wrapped_llm).__name__

    @property
    def base_url(self) -> str | None:
        return getattr(self.wrapped_llm, "base_url", None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.wrapped_llm!r})"


# --- OpenAI-compatible implementation --------------------------------------------------------

#: The abilities an endpoint has unless its configuration says otherwise (``reasoning_replay``, left out, defaults
#: by host: see :mod:`agents.engine.reasoning`). ``tool_call``: native function calling; ``parallel_tool_calls``:
#: several calls in one reply; ``json_mode``: ``response_format`` json_object; ``forced_tool_choice``:
#: ``tool_choice`` "required" or a named function; ``stream_only``: only streamed requests are answered (``chat()``
#: then streams and assembles the reply); ``reasoning_output`` and ``vision``: informational.
DEFAULT_ABILITIES: Mapping[str, bool] = MappingProxyType(
    {
        "tool_call": True,
        "parallel_tool_calls": True,
        "json_mode": True,
        "forced_tool_choice": True,
        "stream_only": False,
        "reasoning_output": False,
        "vision": False,
    }
)

# The providers' context-length refusals: OpenAI, DeepSeek, vLLM ("maximum context length"), SGLang ("longer
# than the model's context length", github.com/QwenLM/Qwen3/issues/1321), Kimi ("exceeded model token limit",
# github.com/MoonshotAI/kimi-cli/issues/2011), Qwen/DashScope ("Range of input length should be",
# github.com/QwenLM/qwen-code/issues/98), GLM (error 1261 "Prompt exceeds max length",
# github.com/NousResearch/hermes-agent/pull/1877), Anthropic-style gateways ("prompt is too long").
_CONTEXT_LENGTH_RE = re.compile(
    r"context[ _-]?length|maximum context|context window|prompt is too long|too many tokens"
    r"|exceeded model token limit|range of input length|prompt exceeds max length|input is too long",
    re.IGNORECASE,
)
_CONTEXT_LENGTH_CODES = frozenset({"context_length_exceeded", "1261"})


class OpenAICompatibleLLM:
    """An :class:`LLM` on any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek,
    Qwen, vLLM, Ollama...), through the official ``openai`` SDK's client, without its typed
    request and response layer: bodies are sent as plain dicts and replies decoded by
    :mod:`agents.engine.completion` and :mod:`agents.engine.sse`.

    The SDK retries 429/5xx and connection errors ``max_retries`` times (a 429 asking to wait longer than
    ``MAX_RETRY_WAIT`` is not retried); whatever still fails is raised as :class:`LLMError`:
    :class:`ContextLengthExceededError` for a prompt that is too long for the model (in any provider's words),
    :class:`RateLimitedError` for a 429 (with the wait asked for), :class:`EndpointMisconfiguredError` for an
    answer that means a setting is wrong (see :mod:`agents.engine.endpoint_errors`). With a ``guard`` (see
    :class:`ConnectGuard`) a refused address raises :class:`EndpointRefusedError` before anything is sent.

    Every request carries ``default_headers`` (values never logged nor put in an error) and ``default_query``
    (Azure's ``api-version``); with ``api_key_header`` (Azure: ``"api-key"``) the key goes in that header and
    no bearer token is sent; ``max_output_tokens`` is sent as ``max_tokens``. With the ``stream_only`` ability
    :meth:`chat` streams and assembles the reply.

    ``reasoning_replay`` (else ``abilities["reasoning_replay"]``, else the base URL host's default): whether
    the reasoning kept on tool-calling assistant messages is sent back (see :mod:`agents.engine.reasoning`).
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str,
        model: str,
        abilities: Mapping[str, bool] | None = None,
        context_window: int = 128000,
        timeout: float = 60.0,
        max_retries: int = 2,
        extra_body: dict[str, Any] | None = None,
        client: openai.AsyncOpenAI | None = None,
        guard: ConnectGuard | None = None,
        reasoning_replay: bool | None = None,
        default_headers: Mapping[str, str] | None = None,
        default_query: Mapping[str, str] | None = None,
        api_key_header: str | None = None,
        max_output_tokens: int | None = None,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.abilities: Mapping[str, bool] = MappingProxyType({**DEFAULT_ABILITIES, **(abilities or {})})
        self.reasoning_replay = (
            _reasoning_replay(self.abilities, base_url) if reasoning_replay is None else reasoning_replay
        )
        self.context_window = context_window
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra_body = dict(extra_body or {})
        self.default_headers: Mapping[str, str] = MappingProxyType(dict(default_headers or {}))
        self.default_query: Mapping[str, str] = MappingProxyType(dict(default_query or {}))
        self.api_key_header = api_key_header or None
        self.max_output_tokens = max_output_tokens
        self._api_key = api_key
        self._client = client
        self._guard = guard
        self._options: openai.RequestOptions | None = None  # request_options(), built on the first request
        self._template: Any = None  # the SDK's FinalRequestOptions for a chat request: see _post

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(model={self.model!r}, base_url={self.base_url!r})"

    def client(self) -> openai.AsyncOpenAI:
        """The SDK client used for the next call (the shared one unless one was injected)."""
        if self._client is not None:
            return self._client
        return get_shared_client(
            self.base_url, self._api_key, self.timeout, self.max_retries, guard=self._guard
        )

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
        parallel_tool_calls: bool | None = None,
    ) -> ChatResponse:
        """One completion, as a whole. ``parallel_tool_calls`` is sent only with ``tools`` (OpenAI refuses
        it without them), and only when given: the engine passes ``False`` for endpoints whose
        ``parallel_tool_calls`` ability is off.

        With the ``stream_only`` ability the request is streamed and the reply assembled from its chunks
        (:class:`~agents.engine.stream_assembly.StreamAssembly`): the same :class:`ChatResponse`.
        """
        sent, encoded = self._sent(messages)
        body = self._body(sent, temperature)
        if tools:
            body["tools"] = list(tools)
            if tool_choice is not None:
                body["tool_choice"] = tool_choice
            if parallel_tool_calls is not None:
                body["parallel_tool_calls"] = parallel_tool_calls
        if response_format is not None:
            body["response_format"] = dict(response_format)
        try:
            if self.abilities.get("stream_only"):
                return await self._streamed_chat(body, sent, encoded)
            response = await self._post(body, encoded)
            return chat_response(response.content, sent)
        except (openai.OpenAIError, ValueError, AttributeError, TypeError) as exc:
            raise self._error(exc) from exc

    async def _streamed_chat(
        self, body: dict[str, Any], sent: list[Message], encoded: Sequence[bytes] | None
    ) -> ChatResponse:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        assembly = StreamAssembly()
        async with aclosing(self._events(body, encoded)) as chunks:
            async for chunk in chunks:
                assembly.add(chunk)
        return assembly.response(sent)

    async def stream_chat(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        usage: Usage | None = None,
    ) -> AsyncIterator[str]:
        """Yield content deltas; add the stream's usage to ``usage`` when it ends.

        The SDK sends the request (see :meth:`_post`); the body is read raw and decoded by
        :func:`~agents.engine.sse.sse_events` (see :func:`~agents.engine.sse.sse_payloads` why). Reasoning deltas (streamed before the content by thinking
        models) are never yielded; they count in the usage estimate when the provider reports none. The
        usage is read wherever the provider puts it (see :func:`~agents.engine.completion.chunk_usage`).
        """
        sent, encoded = self._sent(messages)
        body = self._body(sent, temperature)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        produced: list[str] = []
        reasoned: list[str] = []
        reported: Usage | None = None
        try:
            async with aclosing(self._events(body, encoded)) as chunks:
                async for chunk in chunks:
                    delta = plain_content(chunk)
                    if delta is not None:  # most chunks: a piece of the answer, nothing else to read
                        produced.append(delta)
                        yield delta
                        continue
                    reported = chunk_usage(chunk) or reported
                    delta = delta_content(chunk)
                    if delta:
                        produced.append(delta)
                        yield delta
                    elif thought := delta_reasoning(chunk):
                        reasoned.append(thought)
        except (openai.OpenAIError, ValueError, AttributeError, TypeError) as exc:
            raise self._error(exc) from exc
        finally:
            if usage is not None:
                usage.add(reported or estimated_usage(sent, "".join(reasoned) + "".join(produced)))

    async def _events(
        self, body: dict[str, Any], encoded: Sequence[bytes] | None
    ) -> AsyncGenerator[dict[str, Any], None]:
        """The JSON chunks of a streamed completion (an ``error`` chunk raised as the SDK raised it).

        Raises the SDK's errors for transport failures while the body is read, and ``ValueError`` for a
        stream without any event.
        """
        response = await self._post(body, encoded, stream=True)
        chunks = 0
        async with (
            aclosing(response),
            aclosing(response.aiter_bytes()) as raw,
            aclosing(sse_events(raw)) as payloads,
        ):
            try:
                async for chunk in payloads:
                    chunks += 1
                    if chunk.get("error"):
                        raise _stream_error(chunk["error"], response.request)
                    yield chunk
                await _drain(raw)
            # What the SDK's own stream raised for a transport failure while reading the body.
            except httpx2.TimeoutException as exc:
                raise openai.APITimeoutError(request=response.request) from exc
            except _TRANSPORT_ERRORS as exc:
                raise openai.APIConnectionError(request=response.request) from exc
        if not chunks:
            raise ValueError("the stream ended without any event")

    def _sent(self, messages: Sequence[Message]) -> tuple[list[Message], Sequence[bytes] | None]:
        """The messages as sent (see :func:`~agents.engine.reasoning.wire_messages`), and their JSON encodings
        when ``messages`` remembers them (the run's :class:`~agents.engine.transcript.WireView`: each message
        stripped and encoded once, when first sent), else ``None``."""
        sent = getattr(messages, "sent", None)
        if callable(sent):
            try:
                view = sent(replay=self.reasoning_replay)
            except (TypeError, ValueError):
                pass  # a message that is not plain JSON: sent through the SDK's own encoder, as before
            else:
                return list(view.messages), view.encoded
        return wire_messages(messages, replay=self.reasoning_replay), None

    def _body(self, sent: list[Message], temperature: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": sent}
        if temperature is not None:
            body["temperature"] = temperature
        if self.max_output_tokens is not None:
            body["max_tokens"] = self.max_output_tokens
        return body

    def request_options(self) -> openai.RequestOptions:
        """The SDK request options every call carries: the key (as ``Authorization: Bearer``, or in
        ``api_key_header`` with no bearer), ``default_headers`` and ``default_query``. For other requests to
        the endpoint (``GET /models``) made through :meth:`client`."""
        options: openai.RequestOptions = {"security": {"bearer_auth": True}}  # what ``create`` sends
        headers: dict[str, str | openai.Omit] = dict(self.default_headers)
        if self.api_key_header:
            # Azure OpenAI takes the key in ``api-key`` (https://learn.microsoft.com/azure/ai-foundry/openai/reference);
            # the bearer header is left out so that the key goes nowhere else.
            headers[self.api_key_header] = self._api_key
            headers["Authorization"] = openai.Omit()
        if headers:
            options["headers"] = headers
        if self.default_query:
            options["params"] = dict(self.default_query)
        return options

    async def _post(
        self, body: dict[str, Any], encoded: Sequence[bytes] | None = None, *, stream: bool = False
    ) -> httpx2.Response:
        """Send a chat-completions request through the SDK's untyped ``post``.

        The same client, auth, base URL, retries (429/5xx, connection errors), timeouts and HTTP
        errors (as the SDK's ``APIStatusError`` subclasses) as ``chat.completions.create``, but
        the body goes out as the plain dict it is: ``create`` walked every message against the
        SDK's TypedDicts on every call (``async_maybe_transform``), and the history grows each
        call. With ``encoded`` (each message's JSON, see :meth:`_sent`) the body goes as bytes
        assembled from those pieces (:func:`encoded_body`), the same bytes the SDK's encoder writes,
        so that only what is new is encoded. Returns the transport's response, read unless
        ``stream``; a streamed one is the caller's to close.
        """
        if self.extra_body:
            body = {**body, **self.extra_body}  # merged as the SDK merges ``extra_body``: its keys win
        if self._options is None:
            self._options = self.request_options()
        if self._template is None:
            self._template = chat_request_template(self._options)
        client = self.client()
        if encoded is not None and body.get("messages") is not None and "messages" not in self.extra_body:
            options = request_options_like(
                self._template, content=encoded_body(body, encoded), json_data=None
            )
        else:
            options = request_options_like(self._template, content=None, json_data=body)
        # What ``client.post`` does with these options (it builds them anew, 20-50 µs of pydantic a request).
        response: httpx2.Response = await client.request(httpx2.Response, options, stream=stream)
        return response

    def _redact(self, text: str) -> str:
        """``text`` without the key or any configured header value (gateway tokens travel in headers)."""
        if self._api_key:
            text = text.replace(self._api_key, "***")
        for value in self.default_headers.values():
            if len(value) >= 4:  # a short value ("1", "yes") is no secret, and would mangle the message
                text = text.replace(value, "***")
        return text

    def _error(self, exc: Exception) -> LLMError:
        status = getattr(exc, "status_code", None)
        detail = self._redact(getattr(exc, "message", None) or str(exc) or type(exc).__name__)
        where = urlsplit(self.base_url).hostname or "?"
        prefix = f"{self.model} at {where}: {type(exc).__name__}"
        if status is not None:
            prefix += f" (HTTP {status})"
        if not isinstance(exc, openai.OpenAIError):
            detail = f"malformed response: {detail}"
        error: LLMError
        setting = (
            misconfiguration(
                status,
                detail,
                base_url=self.base_url,
                api_key_header=self.api_key_header,
                default_query=self.default_query,
                stream_only=bool(self.abilities.get("stream_only")),
            )
            if isinstance(exc, openai.APIStatusError)
            else None
        )
        if setting is not None:
            error = EndpointMisconfiguredError(
                f"{self.model} at {where}: {setting} (HTTP {status}: {detail})"
            )
        elif _is_context_length(exc):
            error = ContextLengthExceededError(f"{prefix}: {detail}")
        elif status == 429:
            wait = (
                retry_after_seconds(exc.response.headers) if isinstance(exc, openai.APIStatusError) else None
            )
            error = RateLimitedError(f"{prefix}: {_rate_limited(wait)}: {detail}")
            error.retry_after = wait
        else:
            error = LLMError(f"{prefix}: {detail}")
        error.status_code = status
        error.kind = _failure_kind(exc, status)
        error.model = self.model
        logger.warning("LLM call failed: %s (HTTP %s)", type(exc).__name__, status)
        return error


def _failure_kind(exc: Exception, status: int | None) -> FailureKind:
    # The SDK's aiohttp transport reports a connection that could not be made (refused, unreachable) as a
    # connect timeout: that is "unreachable"; a timeout after connecting is "did not answer in time".
    if isinstance(exc, openai.APITimeoutError) and not isinstance(exc.__cause__, httpx2.ConnectTimeout):
        return "timed_out"
    if isinstance(exc, openai.APIConnectionError):
        return "unreachable"
    if status in (401, 403):
        return "key_refused"
    if status == 404:
        return "model_unknown"
    if status is not None and status >= 500:
        return "server_error"
    return "other"


def _rate_limited(wait: float | None) -> str:
    if wait is None:
        return "rate limited, with no time given to wait"
    return f"rate limited, asked to wait {wait:g} s"


# --- the event stream -------------------------------------------------------------------------

# Transport failures of httpx2 while a body is read, as the SDK's stream maps them to
# APIConnectionError (it adds the TLS and stream-end errors that anyio raises unmapped).
_TRANSPORT_ERRORS: tuple[type[Exception], ...] = (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)
_DRAIN_ERRORS: tuple[type[Exception], ...] = (TimeoutError, httpx2.TimeoutException, *_TRANSPORT_ERRORS)
# How long the rest of a body is read after ``[DONE]``, so that the connection goes back to the pool.
_DRAIN_SECONDS = 0.1


def plain_content(chunk: dict[str, Any]) -> str | None:
    """The content of a chunk that carries a non-empty content delta and no usage, read in one go; ``None``
    for any other chunk, which :func:`~agents.engine.completion.chunk_usage` and
    :func:`~agents.engine.completion.delta_content` then read (``tests/engine/test_llm_plain_content.py``
    checks the two agree)."""
    if chunk.get("usage") is not None:
        return None
    choices = chunk.get("choices")
    if type(choices) is not list or not choices:
        return None
    choice = choices[0]
    if type(choice) is not dict or choice.get("usage") is not None:
        return None
    delta = choice.get("delta")
    if type(delta) is not dict:
        return None
    content = delta.get("content")
    return content if type(content) is str and content else None


def _stream_error(error: Any, request: httpx2.Request) -> openai.APIError:
    """The error a provider reports inside a stream, built as the SDK's stream built it."""
    message = error.get("message") if isinstance(error, dict) else None
    if not message or not isinstance(message, str):
        message = "An error occurred during streaming"
    return openai.APIError(message, request, body=error)


async def _drain(body: AsyncIterator[bytes]) -> None:
    """Read what is left of a body after ``[DONE]`` (its end, normally), briefly.

    An HTTP/1.1 connection whose response was not read to its end is closed instead of
    reused; the SDK's stream drains the same way.
    """
    try:
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in body:
                pass
    except _DRAIN_ERRORS:
        pass  # the answer is complete: a failure to reuse the connection is no error


# The SDK's request encoding (``openai._utils._json.openapi_dumps``: ``ensure_ascii=False``, no spaces, no NaN,
# UTF-8), one encoder for every piece.
_WIRE_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def wire_json(value: Any) -> bytes:
    """``value`` as the SDK writes it in a request body (``TypeError``/``ValueError`` for what JSON cannot say)."""
    return _WIRE_ENCODER.encode(value).encode()


def encoded_body(body: Mapping[str, Any], messages: Sequence[bytes]) -> bytes:
    """The JSON of ``body`` with its ``messages`` given as their encodings: byte for byte what the SDK's
    encoder writes for ``body`` (a JSON object is its ``"key":value`` pairs, in order, comma-separated).
    Its ``tools`` are encoded once per tool (:func:`encoded_tools`)."""
    parts = [
        b'"messages":[' + b",".join(messages) + b"]"
        if key == "messages"
        else b'"tools":' + encoded_tools(value)
        if key == "tools" and type(value) is list
        else wire_json(key) + b":" + wire_json(value)
        for key, value in body.items()
    ]
    return b"{" + b",".join(parts) + b"}"


# Each tool's JSON by the tool dict's identity (the dict kept, so that its id is not reused): a run sends the
# same schemas every turn (``ToolRegistry.openai_schemas`` builds each tool's once), and a long MCP list is
# large. A tool dict is not to be changed once sent (a new schema is a new dict).
_TOOL_JSON: dict[int, tuple[Any, bytes]] = {}
_TOOL_JSON_MAX = 1024


def encoded_tools(tools: list[Any]) -> bytes:
    """The JSON of a request's ``tools``, as :func:`wire_json` writes it, each tool dict encoded once."""
    pieces: list[bytes] = []
    for tool in tools:
        if type(tool) is not dict:
            pieces.append(wire_json(tool))
            continue
        known = _TOOL_JSON.get(id(tool))
        if known is None or known[0] is not tool:
            if len(_TOOL_JSON) >= _TOOL_JSON_MAX:
                _TOOL_JSON.clear()
            known = _TOOL_JSON[id(tool)] = (tool, wire_json(tool))
        pieces.append(known[1])
    return b"[" + b",".join(pieces) + b"]"


def strip_metadata(messages: Sequence[Message]) -> list[Message]:
    """Copies of ``messages`` without the engine's ``_``-prefixed keys."""
    return [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]


def _is_context_length(exc: Exception) -> bool:
    if not isinstance(exc, openai.APIError) or isinstance(exc, openai.APIConnectionError):
        return False
    status = getattr(exc, "status_code", None)
    if status is not None and status not in (400, 413, 422):
        return False
    return str(exc.code) in _CONTEXT_LENGTH_CODES or bool(_CONTEXT_LENGTH_RE.search(exc.message or ""))
