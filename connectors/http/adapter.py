"""The HTTP connector adapter: one action call becomes one (SSRF-checked) request on httpx.

Each connector has its own ``httpx.AsyncClient`` per event loop, whose transport checks every new
connection with the SSRF guard (:mod:`connectors.http.transport`). Redirects are followed here, at
most five, and each hop's connection is checked again; credentials, default headers and header
arguments go only to the connector's own origin. Idempotent methods are retried on connection
errors and 502/503/504; a per-connector circuit breaker stops calls to a failing service.
Ordinary failures come back as ``CallOutcome(status="error")`` with a short, secret-free message.

A call made by a run passes its idempotency key (:mod:`connectors.idempotency`): POST, PUT, PATCH
and DELETE requests carry it in the connector's idempotency header (``Idempotency-Key`` by default),
on every retry and on redirect hops to the connector's own origin. "Test connection" sends no key,
and judges the base URL's answer (:func:`http_test_connection`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from django.utils.translation import gettext

from connectors.adapter_types import (
    CallOutcome,
    CallStatus,
    ConnectionFailed,
    ConnectionTestResult,
    ConnectionUnconfirmed,
    ConnectionWorks,
    HttpActionSpec,
    HttpConnectorConfig,
)
from connectors.circuit import breaker_for
from connectors.http.auth import AuthError, AuthMaterial, auth_material, secrets_of
from connectors.http.body import excerpt, read_capped, render_body
from connectors.http.request import (
    IDEMPOTENT_METHODS,
    PreparedRequest,
    RequestBuildError,
    build_request,
    split_base_url,
    with_header,
)
from connectors.http.transport import GuardedTransport
from connectors.idempotency import KEY_PATTERN, KEYED_METHODS
from connectors.loop_cache import PerLoop
from connectors.scrub import scrub
from connectors.ssrf import SSRFBlocked, normalise_host

logger = logging.getLogger(__name__)

MAX_REDIRECTS = 5
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_RETRY_STATUSES = frozenset({502, 503, 504})
_MAX_BACKOFF_SECONDS = 5.0
_FOREIGN_ORIGIN_HEADERS = frozenset({"accept", "content-type"})

ExchangeKind = Literal["response", "connect", "timeout", "transport", "blocked", "invalid", "auth"]

_clients: PerLoop[dict[str, tuple[tuple[str, ...], httpx.AsyncClient]]] = PerLoop(dict)


@dataclass(frozen=True, slots=True)
class _Exchange:
    """One attempt's result: a final response (status and capped body) or an error without one."""

    kind: ExchangeKind = "response"
    status: int | None = None
    reason: str = ""
    content_type: str = ""
    charset: str | None = None
    body: bytes = b""
    truncated: bool = False
    error: str = ""
    auth_failure: bool = False  # an AuthError caused by an unreachable or failing token endpoint

    @property
    def retryable(self) -> bool:
        return self.kind == "connect" or self.status in _RETRY_STATUSES

    @property
    def breaker_verdict(self) -> Literal["failure", "success", "neutral"]:
        if self.kind in ("connect", "timeout", "transport") or (self.status or 0) >= 500 or self.auth_failure:
            return "failure"
        if self.kind in ("blocked", "invalid", "auth"):
            return "neutral"
        return "success"


def _allowed_hosts(config: HttpConnectorConfig) -> tuple[str, ...]:
    return tuple(sorted({normalise_host(h) for h in config.allowed_private_hosts if h.strip()}))


def _new_client(allowed_private_hosts: tuple[str, ...]) -> httpx.AsyncClient:
    transport = GuardedTransport(allowed_private_hosts=allowed_private_hosts)
    return httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False)


async def _client_for(config: HttpConnectorConfig) -> httpx.AsyncClient:
    """The connector's shared client in this event loop (its pool keeps connections alive)."""
    clients = _clients.get()
    allowed = _allowed_hosts(config)
    entry = clients.get(config.connector_id)
    if entry is not None and entry[0] == allowed:
        return entry[1]
    client = _new_client(allowed)
    clients[config.connector_id] = (allowed, client)
    if entry is not None:  # the allowed hosts changed: connections of the old client must not be reused
        await entry[1].aclose()
    return client


async def aclose_http_clients() -> None:
    """Close the HTTP clients of the running event loop (call on shutdown and in tests)."""
    clients = _clients.pop() or {}
    for _allowed, client in clients.values():
        await client.aclose()


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default_port


def _transport_error(exc: Exception, host: str, config: HttpConnectorConfig) -> _Exchange:
    if isinstance(exc, SSRFBlocked):
        return _Exchange(kind="blocked", error=str(exc))
    if isinstance(exc, httpx.ConnectTimeout):
        return _Exchange(
            kind="connect", error=f"could not connect to {host} within {config.connect_timeout:g} s"
        )
    if isinstance(exc, httpx.ConnectError):
        return _Exchange(kind="connect", error=f"could not connect to {host}: {exc}")
    if isinstance(exc, httpx.TimeoutException):
        return _Exchange(kind="timeout", error=f"{host} did not answer within {config.read_timeout:g} s")
    if isinstance(exc, httpx.TransportError):
        return _Exchange(kind="transport", error=f"the connection to {host} failed ({type(exc).__name__})")
    return _Exchange(kind="invalid", error=f"invalid request URL ({type(exc).__name__})")


async def _send_following_redirects(
    client: httpx.AsyncClient, config: HttpConnectorConfig, prepared: PreparedRequest, material: AuthMaterial
) -> _Exchange:
    url = httpx.URL(prepared.url, params=list(prepared.query))
    home = _origin(url)
    method, body = prepared.method, prepared.body
    timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
    for hop in range(MAX_REDIRECTS + 1):
        own_origin = _origin(url) == home
        headers = {k: v for k, v in prepared.headers if own_origin or k.lower() in _FOREIGN_ORIGIN_HEADERS}
        if body is None:
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
        request_url = url
        if own_origin:
            headers.update(material.headers)
            if material.query:
                request_url = url.copy_merge_params(list(material.query))
        try:
            request = client.build_request(
                method, request_url, headers=headers, content=body, timeout=timeout
            )
            response = await client.send(request, stream=True)
            try:
                location = response.headers.get("location")
                if response.status_code in _REDIRECT_STATUSES and location:
                    if hop == MAX_REDIRECTS:
                        return _Exchange(
                            kind="invalid", error=f"too many redirects (more than {MAX_REDIRECTS})"
                        )
                    url = url.join(location)
                    if url.scheme not in ("http", "https"):
                        return _Exchange(
                            kind="invalid", error=f"redirect to an unsupported scheme {url.scheme!r}"
                        )
                    if (
                        response.status_code == 303
                        and method != "HEAD"
                        or (response.status_code in (301, 302) and method == "POST")
                    ):
                        method, body = "GET", None
                    continue
                data, truncated = await read_capped(response, config.max_response_bytes)
                return _Exchange(
                    status=response.status_code,
                    reason=response.reason_phrase,
                    content_type=response.headers.get("content-type", ""),
                    charset=response.charset_encoding,
                    body=data,
                    truncated=truncated,
                )
            finally:
                await response.aclose()
        except (SSRFBlocked, httpx.TransportError, httpx.InvalidURL) as exc:
            return _transport_error(exc, url.host or "the server", config)
    raise AssertionError("unreachable")  # pragma: no cover


async def _exchange(
    client: httpx.AsyncClient, config: HttpConnectorConfig, prepared: PreparedRequest
) -> _Exchange:
    """One attempt with credentials; an OAuth2 401 fetches a new token and tries once more."""
    refreshed = False
    while True:
        try:
            material = await auth_material(client, config, force_refresh=refreshed)
        except AuthError as exc:
            kind: ExchangeKind = "blocked" if exc.blocked else "auth"
            return _Exchange(kind=kind, error=str(exc), auth_failure=exc.failure)
        result = await _send_following_redirects(client, config, prepared, material)
        if result.status == 401 and config.auth.type == "oauth2_client_credentials" and not refreshed:
            refreshed = True
            continue
        return result


async def _exchange_with_retries(
    client: httpx.AsyncClient, config: HttpConnectorConfig, prepared: PreparedRequest
) -> _Exchange:
    attempts = 1 + (max(0, config.max_retries) if prepared.method in IDEMPOTENT_METHODS else 0)
    for attempt in range(attempts):
        result = await _exchange(client, config, prepared)
        if not result.retryable or attempt == attempts - 1:
            return result
        delay = min(_MAX_BACKOFF_SECONDS, config.retry_backoff_seconds * 2**attempt)
        logger.info(
            "HTTP connector %s: attempt %d failed (%s), retrying in %.2f s",
            config.connector_id,
            attempt + 1,
            result.status or result.kind,
            delay,
        )
        if delay > 0:
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _error_outcome(
    message: str, started: float, config: HttpConnectorConfig, request_bytes: int = 0
) -> CallOutcome:
    return CallOutcome(
        status="error",
        content="",
        error=scrub(message, secrets_of(config)),
        latency_ms=_elapsed_ms(started),
        request_bytes=request_bytes,
    )


def _outcome(
    result: _Exchange, started: float, config: HttpConnectorConfig, request_bytes: int
) -> CallOutcome:
    if result.status is None:
        return _error_outcome(result.error, started, config, request_bytes)
    secrets = secrets_of(config)
    text = scrub(
        render_body(
            result.body,
            content_type=result.content_type,
            charset=result.charset,
            truncated=result.truncated,
            cap=config.max_response_bytes,
        ),
        secrets,
    )
    latency_ms = _elapsed_ms(started)
    status: CallStatus
    if result.status < 400:
        status, content, error = "ok", text or f"HTTP {result.status} {result.reason} (empty body)", ""
    else:
        status, content = "error", text
        error = f"HTTP {result.status} {result.reason}".strip()
        if text:
            error += ": " + excerpt(text)
    return CallOutcome(
        status=status,
        content=content,
        error=error,
        http_status=result.status,
        latency_ms=latency_ms,
        request_bytes=request_bytes,
        response_bytes=len(result.body),
        truncated=result.truncated,
    )


def _keyed(
    prepared: PreparedRequest, config: HttpConnectorConfig, idempotency_key: str | None
) -> PreparedRequest:
    """The request with the idempotency header, when it writes and the connector sends one."""
    if not idempotency_key or not config.idempotency_header or prepared.method not in KEYED_METHODS:
        return prepared
    if not KEY_PATTERN.fullmatch(idempotency_key):
        raise RequestBuildError("the idempotency key must be 1 to 255 visible ASCII characters")
    return with_header(prepared, config.idempotency_header, idempotency_key)


async def http_call(
    config: HttpConnectorConfig,
    action: HttpActionSpec,
    args: Mapping[str, Any],
    *,
    idempotency_key: str | None = None,
) -> CallOutcome:
    """Call one action of an HTTP connector with the LLM's arguments.

    ``idempotency_key``: the key of the run's tool call making this call (none outside a run); it
    replaces a default header or argument of the same name.
    """
    started = time.perf_counter()
    try:
        prepared = build_request(config.base_url, action, args, config.default_headers)
        prepared = _keyed(prepared, config, idempotency_key)
    except RequestBuildError as exc:
        return _error_outcome(str(exc), started, config)
    request_bytes = len(prepared.body or b"")
    breaker = breaker_for(
        config.connector_id,
        failure_threshold=config.circuit_failure_threshold,
        open_seconds=config.circuit_open_seconds,
    )
    refusal = breaker.before_call()
    if refusal is not None:
        return _error_outcome(refusal, started, config)
    verdict: str | None = None
    try:
        client = await _client_for(config)
        result = await _exchange_with_retries(client, config, prepared)
        verdict = result.breaker_verdict
    except Exception as exc:  # a bug, not an ordinary failure: report its type only (messages may hold URLs)
        logger.error(
            "HTTP connector %s action %s: unexpected %s", config.connector_id, action.name, type(exc).__name__
        )
        result = _Exchange(kind="invalid", error=f"unexpected error ({type(exc).__name__})")
    finally:
        if verdict == "failure":
            breaker.record_failure()
        elif verdict == "success":
            breaker.record_success()
        else:
            breaker.release()
    outcome = _outcome(result, started, config, request_bytes)
    logger.info(
        "HTTP connector %s action %s: %s -> %s in %.0f ms",
        config.connector_id,
        action.name,
        prepared.method,
        result.status or result.kind,
        outcome.latency_ms,
    )
    return outcome


async def http_test_connection(config: HttpConnectorConfig) -> ConnectionTestResult:
    """GET the base URL with the connector's credentials (SSRF-checked, no retries, no circuit breaker).

    The answer decides: below 400 the connection works, and with 405 too (a resource is at the base
    URL and takes other methods; the credentials may not have been checked). 404 and 410 leave it
    unconfirmed: the base URL may be wrong, or the API has nothing at its root. 401 and 403 mean the
    server refused the credentials; any other answer, or none, is a failure.
    """
    started = time.perf_counter()
    secrets = secrets_of(config)
    try:
        scheme, netloc, path, query = split_base_url(config.base_url)
    except RequestBuildError as exc:
        return ConnectionFailed(reason=scrub(str(exc), secrets), latency_ms=_elapsed_ms(started))
    prepared = PreparedRequest(
        method="GET",
        url=f"{scheme}://{netloc}{path or '/'}",
        query=query,
        headers=(("Accept", "*/*"), *config.default_headers.items()),
    )
    try:
        # A client of its own: the admin calls this from sync code, often in a throwaway event loop.
        async with _new_client(_allowed_hosts(config)) as client:
            result = await _exchange(client, config, prepared)
    except Exception as exc:  # see http_call
        logger.error("HTTP connector %s test: unexpected %s", config.connector_id, type(exc).__name__)
        result = _Exchange(kind="invalid", error=f"unexpected error ({type(exc).__name__})")
    latency_ms = _elapsed_ms(started)
    if result.status is None:
        return ConnectionFailed(reason=scrub(result.error, secrets), latency_ms=latency_ms)
    status = result.status
    answer = {"host": httpx.URL(prepared.url).host, "status": f"HTTP {status} {result.reason}".strip()}
    if status < 400:
        return ConnectionWorks(detail=gettext("%(host)s answered %(status)s") % answer, latency_ms=latency_ms)
    if status == 405:
        detail = gettext(
            "%(host)s answered %(status)s to GET: the base URL exists (the credentials may not have "
            "been checked)"
        )
        return ConnectionWorks(detail=detail % answer, latency_ms=latency_ms)
    if status in (404, 410):
        # The URL without its query string, which may carry a key.
        reason = gettext("the server answered %(status)s at %(url)s: check the base URL") % {
            **answer,
            "url": prepared.url,
        }
        return ConnectionUnconfirmed(reason=scrub(reason, secrets), http_status=status, latency_ms=latency_ms)
    if status in (401, 403):
        reason = gettext("%(host)s refused the credentials (%(status)s)") % answer
    else:
        reason = gettext("%(host)s answered %(status)s") % answer
    return ConnectionFailed(reason=scrub(reason, secrets), http_status=status, latency_ms=latency_ms)
