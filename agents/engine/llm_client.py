"""The ``openai`` SDK clients the engine talks through: one per endpoint and event loop
(:func:`get_shared_client`), over the SDK's aiohttp transport, with a :class:`ConnectGuard` deciding where
they may connect, and a bound on how long a rate-limited request waits before it is retried.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import ipaddress
import socket
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import aiohttp.abc
import httpx2
import openai

from agents.engine.endpoint_errors import retry_after_seconds
from agents.engine.llm_errors import EndpointRefusedError

# A 429 asking for a longer wait than this is not retried by the client: it surfaces at once.
MAX_RETRY_WAIT = 20.0


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

    Runs against the same endpoint reuse its connection pool (and the client's parsed URLs and request
    options: see :class:`_BoundedRetriesClient`). The client speaks HTTP through the SDK's aiohttp transport
    (``openai[aiohttp]`` and ``http_client=DefaultAioHttpClient()``, the SDK's documented way to use aiohttp:
    README "With aiohttp", https://github.com/openai/openai-python#with-aiohttp), chosen by measurement over
    the SDK's default (httpx2's pure-Python HTTP/1.1): a streamed answer costs about half the CPU per chunk,
    and a ``chat()`` at zero latency costs 11-42 % less CPU at K = 10-200 tool calls in the history (the two
    transports interleaved in one process, medians of blocks; ``benchmarks/sdk_turn.py --transports`` times
    whole turns the same way), because aiohttp parses the response in C where httpx2 runs a Python state
    machine per request. With a ``guard`` every connection (redirects included) goes where the guard allows,
    and proxy variables are ignored.
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
    not retried (the SDK waits up to two minutes a retry): a run learns at once that it is rate limited.

    And a chat request's fixed cost is taken down where the SDK redoes the same work on every request: the
    endpoint's URL is parsed once (the SDK parses it three times a request: the path, the path joined to the
    base URL, that URL again as a string), and a request whose body is bytes (the engine's, see
    :func:`~agents.engine.llm.encoded_body`) is built straight from the parsed URL and the SDK's own headers
    (:meth:`_build_request`), whose fixed headers (the SDK's, normalised and merged with the HTTP client's by
    httpx2) are built once for the SDK's inputs to them (:meth:`_fixed_headers`): 78-89 -> 21-31 µs CPU a
    request, the two measured interleaved on one machine (whole turns: ``benchmarks/sdk_turn.py``). Retries,
    their timing, auth, timeouts and the mapping of errors stay the SDK's.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._urls: dict[tuple[httpx2.URL, str], httpx2.URL] = {}
        self._headers: dict[tuple[Any, ...], _FixedHeaders] = {}

    def _should_retry(self, response: httpx2.Response) -> bool:
        wait = retry_after_seconds(response.headers)
        if wait is not None and wait > MAX_RETRY_WAIT:
            return False
        return bool(super()._should_retry(response))

    def _prepare_url(self, url: str) -> httpx2.URL:
        key = (self.base_url, url)
        prepared = self._urls.get(key)
        if prepared is None:
            prepared = self._urls[key] = super()._prepare_url(url)
        return prepared

    def _build_request(self, options: Any, *, retries_taken: int = 0) -> httpx2.Request:
        """The SDK's request for ``options``: built here, the same, for a POST of bytes without query or
        files to an httpx2 client without cookies (:func:`tests.engine.test_llm_client_requests` compares the
        two); anything else by the SDK."""
        http = self._client
        if not (
            options.method == "post"
            and isinstance(options.content, bytes)
            and options.json_data is None
            and options.extra_json is None
            and options.files is None
            and not options.params
            and not self.default_query
            and not self._auth_query(options.security)
            and type(http).build_request is httpx2.AsyncClient.build_request
            and not http.cookies
            and not http.params
        ):
            return super()._build_request(options, retries_taken=retries_taken)
        timeout = self.timeout if isinstance(options.timeout, openai.NotGiven) else options.timeout
        if not isinstance(timeout, float | int | httpx2.Timeout | None):
            return super()._build_request(options, retries_taken=retries_taken)  # a legacy httpx Timeout
        fixed = self._fixed_headers(options)
        if fixed is None:
            return self._build_merged(options, timeout, retries_taken)
        read = timeout.read if isinstance(timeout, httpx2.Timeout) else timeout
        raw = [*fixed.raw, (b"x-stainless-retry-count", str(retries_taken).encode())]
        if read is not None:
            raw.append((b"x-stainless-read-timeout", str(read).encode()))
        raw.append((b"Content-Length", str(len(options.content)).encode()))
        # ``stream=`` adds no header of its own: the list above is the whole of what the SDK's request has.
        request = httpx2.Request(
            "POST",
            fixed.url,
            headers=raw,
            stream=httpx2.ByteStream(options.content),
            extensions={"timeout": httpx2.Timeout(timeout).as_dict()},
        )
        request.read()
        return request

    def _fixed_headers(self, options: Any) -> _FixedHeaders | None:
        """The headers of a request for ``options`` that are the same from one request to the next (all but
        the retry count, the read timeout and the length), remembered for the SDK's inputs to them: its auth
        and default headers (asked for on every request), the request's own headers and the HTTP client's.
        ``None`` where that would not be the SDK's request (the caller then builds it in full)."""
        if self._idempotency_header and options.idempotency_key:
            return None  # a header of its own per request
        if getattr(self, "_provider_runtime", None) is not None:
            return None  # a provider may sign or change each request
        inputs: list[tuple[tuple[str, Any], ...]] = []
        for given in (
            self._auth_headers(options.security),
            self.default_headers,
            options.headers or {},
            self._client.headers,
        ):
            part = _header_key(given)
            if part is None:
                return None
            inputs.append(part)
        key = (options.url, *inputs)
        fixed = self._headers.get(key)
        if fixed is not None and fixed.base_url is self.base_url:
            return fixed
        if any(name in _PER_REQUEST for part in inputs for name in _names(part)):
            return None  # a per-request header set by hand: the SDK's order and values apply
        headers = self._build_headers(options, retries_taken=0)
        headers.pop("x-stainless-retry-count", None)
        headers.pop("x-stainless-read-timeout", None)
        if headers.get("Content-Type", "").startswith("multipart/form-data"):
            return None
        url = self._prepare_url(options.url)
        if url.query or not url.host:
            return None
        merged = httpx2.Headers(self._client.headers)
        merged.update(headers.multi_items())
        if len(self._headers) >= 64:  # e.g. an API key refreshed per request: keep only the recent ones
            self._headers.clear()
        fixed = self._headers[key] = _FixedHeaders(self.base_url, url, ((b"Host", url.netloc), *merged.raw))
        return fixed

    def _build_merged(self, options: Any, timeout: Any, retries_taken: int) -> httpx2.Request:
        """The SDK's request for ``options``, its headers merged with the HTTP client's as httpx2 merges them."""
        headers = self._build_headers(options, retries_taken=retries_taken)
        if headers.get("Content-Type", "").startswith("multipart/form-data"):
            return super()._build_request(options, retries_taken=retries_taken)
        url = self._prepare_url(options.url)
        if url.query:
            return super()._build_request(options, retries_taken=retries_taken)
        merged = httpx2.Headers(self._client.headers)
        merged.update(headers.multi_items())
        return httpx2.Request(
            "POST",
            url,
            content=options.content,
            headers=merged,
            extensions={"timeout": httpx2.Timeout(timeout).as_dict()},
        )


# Headers the SDK sets per request, and httpx2 per body; with any of them among a request's inputs, the
# request is built in full.
_PER_REQUEST = frozenset(
    {"x-stainless-retry-count", "x-stainless-read-timeout", "content-length", "transfer-encoding", "host"}
)


@dataclass(frozen=True, slots=True)
class _FixedHeaders:
    """A request's headers that do not change between requests, as the raw pairs httpx2 sends (``Host``
    first), for the URL and base URL they were built for."""

    base_url: httpx2.URL
    url: httpx2.URL
    raw: tuple[tuple[bytes, bytes], ...]


def _header_key(headers: Any) -> tuple[tuple[str, Any], ...] | None:
    """Hashable headers: a name with its value, or with the type of an ``Omit`` (a removal, which the SDK
    tells apart by its type); ``None`` for any other value."""
    items: list[tuple[str, Any]] = []
    for name, value in headers.items() if not isinstance(headers, httpx2.Headers) else headers.multi_items():
        if isinstance(value, str):
            items.append((name, value))
        elif isinstance(value, openai.Omit):
            items.append((name, type(value)))
        else:
            return None
    return tuple(items)


def _names(headers: tuple[tuple[str, Any], ...]) -> list[str]:
    return [name.lower() for name, _ in headers]


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


@functools.lru_cache(maxsize=256)
def _is_ip_literal(host: str) -> bool:
    """Whether ``host`` is an IP address (asked per request; a name's ``ValueError`` costs ≈ 3 µs)."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class _LiteralGuard(httpx2.AsyncBaseTransport):
    """Checks requests to IP literals, which aiohttp connects to without asking its resolver."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, guard: ConnectGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        if _is_ip_literal(url.host):  # a name is checked by the resolver, for each connection
            port = url.port or (443 if url.scheme == "https" else 80)
            await _checked(self._guard, url.host, port)  # every request: the guard decides each time
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedAioHttpClient(openai.DefaultAioHttpClient):
    """The SDK's aiohttp client with every connection going through a :class:`ConnectGuard`."""

    def __init__(self, guard: ConnectGuard, **kwargs: Any) -> None:
        self._connect_guard = guard
        super().__init__(trust_env=False, **kwargs)

    def _init_transport(self, *args: Any, **kwargs: Any) -> httpx2.AsyncBaseTransport:
        # The attributes read below are the aiohttp transport's, not AsyncBaseTransport's (checked first).
        inner: Any = super()._init_transport(*args, **kwargs)
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


__all__ = [
    "MAX_RETRY_WAIT",
    "ConnectGuard",
    "ConnectRefusal",
    "aclose_shared_clients",
    "get_shared_client",
]
