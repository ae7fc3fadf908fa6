"""An httpx transport whose every new TCP connection goes through the SSRF guard.

httpcore opens connections through a network backend. Ours resolves the URL's host once with
:func:`connectors.ssrf.resolve_and_check` and connects to the checked IP address itself, so there is no
second DNS lookup between check and connect. The URL, the ``Host`` header, TLS SNI and certificate
verification all keep the original host name, and the connection pool stays keyed by that name
(a TLS connection verified for one host is never reused for another host on the same address).
Redirect hops, OAuth token requests and retries open connections through the same backend, so no
request of a connector can skip the check. Feishu channels use the same transport (with the operator's
allowance instead of an admin's).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence

import httpcore
import httpx

from connectors.ssrf import ADMIN_HINT, HostResolutionError, SSRFBlocked, resolve_and_check


class _HideQueryStrings(logging.Filter):
    """httpx logs every request URL at INFO; a query string may carry an API key, so drop it."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, httpx.URL) and a.query for a in args):
            record.args = tuple(a.copy_with(query=None) if isinstance(a, httpx.URL) else a for a in args)
        return True


logging.getLogger("httpx").addFilter(_HideQueryStrings())


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolve, check, then connect to the checked address (trying each in turn)."""

    def __init__(self, allowed_private_hosts: Sequence[str], hint: str = ADMIN_HINT) -> None:
        self._allowed = tuple(allowed_private_hosts)
        self._hint = hint
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore backend interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                addresses = await resolve_and_check(
                    host, port, allowed_private_hosts=self._allowed, hint=self._hint
                )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"resolving {host} timed out") from exc
        except HostResolutionError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        last_error: Exception | None = None
        for ip in addresses:
            try:
                return await self._inner.connect_tcp(
                    ip, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None
        raise last_error

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore backend interface)
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise SSRFBlocked("blocked by the SSRF guard: unix sockets are not allowed")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """``httpx.AsyncHTTPTransport`` with the SSRF-checking network backend; ignores proxy variables.

    ``refusal_hint`` ends a refusal's message: who can allow a private host (an admin, the operator).
    """

    def __init__(
        self,
        *,
        allowed_private_hosts: Sequence[str] = (),
        limits: httpx.Limits | None = None,
        refusal_hint: str = ADMIN_HINT,
    ) -> None:
        limits = limits or httpx.Limits(max_connections=20, max_keepalive_connections=10, keepalive_expiry=30)
        super().__init__(trust_env=False, limits=limits)
        # httpx has no public switch for httpcore's network backend; replace the (unopened) pool it built.
        if not isinstance(getattr(self, "_pool", None), httpcore.AsyncConnectionPool):
            raise RuntimeError("unsupported httpx version: cannot install the SSRF-guarded connection pool")
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_GuardedBackend(allowed_private_hosts, refusal_hint),
        )
