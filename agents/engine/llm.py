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
import hashlib
import ipaddress
import logging
import re
import socket
import ssl
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import aiohttp
import aiohttp.abc
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
from agents.engine.reasoning import reasoning_replay as _reasoning_replay
from agents.engine.reasoning import wire_messages
from agents.engine.sse import sse_lines, sse_payloads
from agents.engine.stream_assembly import StreamAssembly

__all__ = [
    "DEFAULT_ABILITIES",
    "LLM",
    "ChatResponse",
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
]

logger = logging.getLogger(__name__)

Message = dict[str, Any]


class LLMError(Exception):
    """A provider call failed after the client's own retries."""

    status_code: int | None = None
    """The HTTP status of the provider's answer, when there was one."""


class ContextLengthExceededError(LLMError):
    """The provider refused the request because the prompt is longer than its context window."""


class RateLimitedError(LLMError):
    """The endpoint answered 429 after the client's own retries. ``retry_after``: the seconds it asked to wait
    (``Retry-After`` / ``retry-after-ms``), when it said."""

    retry_after: float | None = None


class EndpointMisconfiguredError(LLMError):
    """The endpoint's answer means one of its settings is wrong; the message names the setting to change."""


class EndpointRefusedError(LLMError):
    """The connect guard refused the endpoint's address (or a redirect's): nothing was sent, and the
    call is not retried. Its message says why, for the user: it is a configuration error."""


@dataclass(frozen=True, slots=True)
class ConnectRefusal:
    """A connect guard's refusal of a host, with the reason shown to the user (no secret in it)."""

    reason: str


class ConnectGuard(Protocol):
    """Decides where the client may connect: called for every connection it opens, redirect hops
    included. Implementations are hashable (clients are shared per endpoint and guard)."""

    async def check(self, host: str, port: int) -> Sequence[str] | ConnectRefusal:
        """The IP addresses to connect to (used as they are, never resolved again), or why not.

        Raises ``OSError`` when the name cannot be resolved (a transient failure, retried).
        """
        ...


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
# A 429 asking for a longer wait than this is not retried by the client: it surfaces at once.
MAX_RETRY_WAIT = 20.0

# One AsyncOpenAI client per endpoint and event loop: a client's pooled connections belong to
# the loop that opened them, so a client is never shared across loops.
_shared_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[Any, ...], openai.AsyncOpenAI]
]
_shared_clients = weakref.WeakKeyDictionary()
_loopless_clients: dict[tuple[Any, ...], openai.AsyncOpenAI] = {}


def get_shared_client(
    base_url: str,
    api_key: str,
    timeout: float = 60.0,
    max_retries: int = 2,
    *,
    guard: ConnectGuard | None = None,
) -> openai.AsyncOpenAI:
    """The ``AsyncOpenAI`` client for this endpoint on the running event loop, created once.

    Runs against the same endpoint reuse its connection pool. The client speaks HTTP through the SDK's
    aiohttp transport (``openai[aiohttp]``), whose parser is written in C: a streamed answer costs
    about half the CPU per chunk that the default pure-Python transport costs. With a ``guard`` every
    connection (redirects included) goes where the guard allows, and proxy variables are ignored.
    """
    key = (
        base_url.rstrip("/"),
        hashlib.sha256(api_key.encode()).hexdigest(),
        float(timeout),
        max_retries,
        guard,
    )
    try:
        clients = _shared_clients.setdefault(asyncio.get_running_loop(), {})
    except RuntimeError:
        clients = _loopless_clients
    client = clients.get(key)
    if client is None:
        client = _BoundedRetriesClient(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            http_client=openai.DefaultAioHttpClient() if guard is None else _GuardedAioHttpClient(guard),
        )
        clients[key] = client
    return client


class _BoundedRetriesClient(openai.AsyncOpenAI):
    """The SDK's client, except that a 429 or 503 asking to wait more than :data:`MAX_RETRY_WAIT` seconds is
    not retried (the SDK waits up to two minutes a retry): a run learns at once that it is rate limited."""

    def _should_retry(self, response: httpx2.Response) -> bool:
        wait = retry_after_seconds(response.headers)
        if wait is not None and wait > MAX_RETRY_WAIT:
            return False
        return bool(super()._should_retry(response))


class _GuardedResolver(aiohttp.abc.AbstractResolver):
    """aiohttp's resolver for host names: asks the guard, and connects to the addresses it checked."""

    def __init__(self, guard: ConnectGuard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[aiohttp.abc.ResolveResult]:
        verdict = await _checked(self._guard, host, port)
        results: list[aiohttp.abc.ResolveResult] = []
        for ip in verdict:
            found = socket.AF_INET6 if ipaddress.ip_address(ip).version == 6 else socket.AF_INET
            if family in (socket.AF_UNSPEC, found):
                flags = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV
                results.append(
                    {"hostname": host, "host": ip, "port": port, "family": found, "proto": 0, "flags": flags}
                )
        if not results:
            raise OSError(f"{host} has no address of the requested family")
        return results

    async def close(self) -> None:
        return None


async def _checked(guard: ConnectGuard, host: str, port: int) -> Sequence[str]:
    verdict = await guard.check(host, port)
    if isinstance(verdict, ConnectRefusal):
        # Not an ``OpenAIError`` or transport error: the SDK lets it through at once, without retrying.
        raise EndpointRefusedError(f"the model endpoint is refused (nothing was sent): {verdict.reason}")
    return verdict


class _LiteralGuard(httpx2.AsyncBaseTransport):
    """Checks requests to IP literals, which aiohttp connects to without asking its resolver."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, guard: ConnectGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        host = request.url.host
        try:
            ipaddress.ip_address(host)
        except ValueError:
            pass  # a name: the resolver checks it
        else:
            port = request.url.port or (443 if request.url.scheme == "https" else 80)
            await _checked(self._guard, host, port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedAioHttpClient(openai.DefaultAioHttpClient):  # type: ignore[misc,valid-type]
    """The SDK's aiohttp client with every connection going through a :class:`ConnectGuard`."""

    def __init__(self, guard: ConnectGuard, **kwargs: Any) -> None:
        self._connect_guard = guard
        super().__init__(trust_env=False, **kwargs)

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        inner = super()._init_transport(*args, **kwargs)
        # The SDK's aiohttp transport builds its session lazily, in the event loop, from ``client``
        # when that is a callable: hand it a session whose connector resolves through the guard.
        if not all(hasattr(inner, name) for name in ("client", "ssl_context", "limits")):
            raise RuntimeError("unsupported openai version: cannot install the guarded aiohttp connector")
        guard, limits, tls = self._connect_guard, inner.limits, inner.ssl_context

        def session() -> aiohttp.ClientSession:
            connector = aiohttp.TCPConnector(
                resolver=_GuardedResolver(guard),
                ssl=tls,
                keepalive_timeout=limits.keepalive_expiry,
                limit=limits.max_connections or 0,
            )
            return aiohttp.ClientSession(connector=connector)

        inner.client = session
        return _LiteralGuard(inner, guard)


async def aclose_shared_clients() -> None:
    """Close the shared clients of the running event loop (application shutdown, test teardown)."""
    clients = _shared_clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.close()


class OpenAICompatibleLLM:
    """An :class:`LLM` on any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek,
    Qwen, vLLM, Ollama...), through the official ``openai`` SDK's client, without its typed
    request and response layer: bodies are sent as plain dicts and replies decoded by
    :mod:`agents.engine.completion` and :mod:`agents.engine.sse`.

    The SDK retries 429/5xx and connection errors ``max_retries`` times; whatever still fails
    is raised as :class:`LLMError` (:class:`ContextLengthExceededError` for a prompt that is
    too long for the model). With a ``guard`` (see :class:`ConnectGuard`) a refused address raises
    :class:`EndpointRefusedError` before anything is sent.

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
        sent = wire_messages(messages, replay=self.reasoning_replay)
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
                return await self._streamed_chat(body, sent)
            response = await self._post(body)
            return chat_response(response.content, sent)
        except (openai.OpenAIError, ValueError, AttributeError, TypeError) as exc:
            raise self._error(exc) from exc

    async def _streamed_chat(self, body: dict[str, Any], sent: list[Message]) -> ChatResponse:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        assembly = StreamAssembly()
        async with aclosing(self._events(body)) as chunks:
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
        :func:`sse_payloads` (see there why). Reasoning deltas (streamed before the content by thinking
        models) are never yielded; they count in the usage estimate when the provider reports none. The
        usage is read wherever the provider puts it (see :func:`~agents.engine.completion.chunk_usage`).
        """
        sent = wire_messages(messages, replay=self.reasoning_replay)
        body = self._body(sent, temperature)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        produced: list[str] = []
        reasoned: list[str] = []
        reported: Usage | None = None
        try:
            async with aclosing(self._events(body)) as chunks:
                async for chunk in chunks:
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

    async def _events(self, body: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The JSON chunks of a streamed completion (an ``error`` chunk raised as the SDK raised it).

        Raises the SDK's errors for transport failures while the body is read, and ``ValueError`` for a
        stream without any event.
        """
        response = await self._post(body, stream=True)
        chunks = 0
        async with (
            aclosing(response),
            aclosing(response.aiter_bytes()) as raw,
            aclosing(sse_lines(raw)) as lines,
            aclosing(sse_payloads(lines)) as payloads,
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

    def _body(self, sent: list[Message], temperature: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": sent}
        if temperature is not None:
            body["temperature"] = temperature
        if self.max_output_tokens is not None:
            body["max_tokens"] = self.max_output_tokens
        return body

    def request_options(self) -> dict[str, Any]:
        """The SDK request options every call carries: the key (as ``Authorization: Bearer``, or in
        ``api_key_header`` with no bearer), ``default_headers`` and ``default_query``. For other requests to
        the endpoint (``GET /models``) made through :meth:`client`."""
        options: dict[str, Any] = {"security": {"bearer_auth": True}}  # what ``create`` sends
        headers: dict[str, Any] = dict(self.default_headers)
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

    async def _post(self, body: dict[str, Any], *, stream: bool = False) -> httpx2.Response:
        """Send a chat-completions request through the SDK's untyped ``post``.

        The same client, auth, base URL, retries (429/5xx, connection errors), timeouts and HTTP
        errors (as the SDK's ``APIStatusError`` subclasses) as ``chat.completions.create``, but
        the body goes out as the plain dict it is: ``create`` walked every message against the
        SDK's TypedDicts on every call (``async_maybe_transform``), and the history grows each
        call. Returns the transport's response, read unless ``stream``; a streamed one is the
        caller's to close.
        """
        if self.extra_body:
            body = {**body, **self.extra_body}  # merged as the SDK merges ``extra_body``: its keys win
        return await self.client().post(
            "/chat/completions",
            cast_to=httpx2.Response,
            body=body,
            options=self.request_options(),
            stream=stream,
        )

    def _redact(self, text: str) -> str:
        """``text`` without the key or any configured header value (gateway tokens travel in headers)."""
        for secret in (self._api_key, *self.default_headers.values()):
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
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
        logger.warning("LLM call failed: %s (HTTP %s)", type(exc).__name__, status)
        return error


def _rate_limited(wait: float | None) -> str:
    if wait is None:
        return "rate limited, with no time given to wait"
    return f"rate limited, asked to wait {wait:g} s"


# --- the event stream -------------------------------------------------------------------------

# Transport failures of httpx2 while a body is read, as the SDK's stream maps them to
# APIConnectionError (it adds the TLS and stream-end errors that anyio raises unmapped).
_TRANSPORT_ERRORS: tuple[type[Exception], ...] = (httpx2.RequestError, ssl.SSLError, anyio.EndOfStream)
# How long the rest of a body is read after ``[DONE]``, so that the connection goes back to the pool.
_DRAIN_SECONDS = 0.1


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
    except (TimeoutError, httpx2.TimeoutException, *_TRANSPORT_ERRORS):
        pass  # the answer is complete: a failure to reuse the connection is no error


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
