"""An async Feishu (Lark) open-platform client for approval cards (FEISHU.md sections 1, 2 and 5).

One pooled ``httpx.AsyncClient`` per base URL and event loop (a pool's connections belong to the
loop that opened them). Every connection goes through the SSRF guard (the connectors' guarded
transport): a private or loopback address is refused unless the app's ``allowed_private_hosts`` (the
operator's allowance, never an org admin's) lists the host. Tenant access tokens are cached per app in this process, refreshed 5-10
minutes before they expire, one fetch at a time per app and loop. The client does not retry
except once after an invalid-token reply; a :class:`FeishuError` says whether the caller may retry.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from connectors.http.transport import GuardedTransport
from connectors.ssrf import SSRFBlocked
from hooks.feishu.cards import card_to_content
from hooks.feishu.errors import RATE_LIMITED, TOKEN_CODES, FeishuError, code_meaning

logger = logging.getLogger(__name__)

TOKEN_PATH = "/open-apis/auth/v3/tenant_access_token/internal"
MESSAGES_PATH = "/open-apis/im/v1/messages"
DELAYED_UPDATE_PATH = "/open-apis/interactive/v1/card/update"
RECEIVE_ID_TYPES = frozenset({"chat_id", "open_id", "union_id", "user_id", "email"})
MAX_UUID_CHARS = 50
# Refresh this many seconds before expiry (a random point in the range, so processes spread out).
REFRESH_MARGIN = (300.0, 600.0)
REFUSAL_HINT = "the operator can allow a private Feishu host with FEISHU_ALLOWED_PRIVATE_HOSTS"


@dataclass(frozen=True)
class FeishuApp:
    """One Feishu app's credentials and the origin to reach (open.feishu.cn, Lark, or a test fake).

    ``allowed_private_hosts``: hosts the SSRF guard lets through although they are private (the
    operator's setting and own default host).
    """

    app_id: str
    app_secret: str = field(repr=False)
    base_url: str = "https://open.feishu.cn"
    allowed_private_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Token:
    value: str
    refresh_at: float


_CacheKey = tuple[str, str, str]
_tokens: dict[_CacheKey, _Token] = {}
_guard = threading.Lock()
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[_CacheKey, asyncio.Lock]]
_locks = weakref.WeakKeyDictionary()
_clients: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[tuple[str, tuple[str, ...]], httpx.AsyncClient]
]
_clients = weakref.WeakKeyDictionary()


def clear_token_cache() -> None:
    """Forget every cached tenant access token (tests, or after rotating an app secret)."""
    with _guard:
        _tokens.clear()


async def aclose_shared_clients() -> None:
    """Close the pooled HTTP clients of the running event loop (shutdown, test teardown)."""
    with _guard:
        clients = _clients.pop(asyncio.get_running_loop(), {})
    for client in clients.values():
        await client.aclose()


def guarded_http(app: FeishuApp, *, max_connections: int = 10) -> httpx.AsyncClient:
    """A new HTTP client for ``app`` whose every connection goes through the SSRF guard (the caller
    closes it); proxy variables are ignored, like the connectors' clients."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=10, keepalive_expiry=30)
    transport = GuardedTransport(
        allowed_private_hosts=app.allowed_private_hosts, limits=limits, refusal_hint=REFUSAL_HINT
    )
    return httpx.AsyncClient(transport=transport, trust_env=False)


def _shared_http(app: FeishuApp, base_url: str) -> httpx.AsyncClient:
    loop = asyncio.get_running_loop()
    key = (base_url, app.allowed_private_hosts)
    with _guard:
        clients = _clients.setdefault(loop, {})
        client = clients.get(key)
        if client is None or client.is_closed:
            client = guarded_http(app, max_connections=50)
            clients[key] = client
        return client


def _lock_for(key: _CacheKey) -> asyncio.Lock:
    loop = asyncio.get_running_loop()
    with _guard:
        return _locks.setdefault(loop, {}).setdefault(key, asyncio.Lock())


class FeishuClient:
    """Sends and updates interactive cards as one Feishu app."""

    def __init__(
        self,
        app: FeishuApp,
        *,
        timeout: float = 10.0,
        http: httpx.AsyncClient | None = None,  # give one from guarded_http(app): it is used as it is
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self._base = app.base_url.rstrip("/")
        self._timeout = timeout
        self._http = http
        self._clock = clock
        secret_digest = hashlib.sha256(app.app_secret.encode()).hexdigest()[:16]
        # The secret's digest is in the key so a rotated secret never reuses the old app's token.
        self._key: _CacheKey = (self._base, app.app_id, secret_digest)

    def __repr__(self) -> str:
        return f"FeishuClient(app_id={self.app.app_id!r}, base_url={self._base!r})"

    # tokens

    async def tenant_access_token(self) -> str:
        """A valid tenant access token, from the cache unless it is due for refresh."""
        token = self._cached()
        if token is not None:
            return token
        async with _lock_for(self._key):
            token = self._cached()
            if token is not None:
                return token
            return await self._fetch_token()

    def _cached(self) -> str | None:
        with _guard:
            token = _tokens.get(self._key)
        if token is not None and self._clock() < token.refresh_at:
            return token.value
        return None

    def _drop_token(self, value: str) -> None:
        with _guard:
            current = _tokens.get(self._key)
            if current is not None and current.value == value:
                del _tokens[self._key]

    async def _fetch_token(self) -> str:
        body = {"app_id": self.app.app_id, "app_secret": self.app.app_secret}
        status, reply, headers = await self._send("POST", TOKEN_PATH, json=body, token=None)
        data = self._check(status, reply, headers, what="fetching a tenant access token")
        value, expire = data.get("tenant_access_token"), data.get("expire")
        if not isinstance(value, str) or not value or not isinstance(expire, int | float) or expire <= 0:
            raise FeishuError("Feishu's token reply lacks tenant_access_token or expire", http_status=status)
        margin = min(random.uniform(*REFRESH_MARGIN), expire / 2)
        with _guard:
            _tokens[self._key] = _Token(value=value, refresh_at=self._clock() + expire - margin)
        logger.info("Feishu tenant access token fetched for app %s (expires in %ss)", self.app.app_id, expire)
        return value

    # messages and cards

    async def send_card(
        self, *, receive_id: str, receive_id_type: str, card: Mapping[str, Any], uuid: str
    ) -> str:
        """Post ``card`` as an interactive message and return its ``message_id``.

        ``uuid`` is Feishu's idempotency key: resending with the same one within an hour posts
        nothing new and returns the first message's id. ``ValueError`` for a card over 30 KB.
        """
        if receive_id_type not in RECEIVE_ID_TYPES:
            raise ValueError(f"receive_id_type must be one of {sorted(RECEIVE_ID_TYPES)}")
        if not uuid or len(uuid) > MAX_UUID_CHARS:
            raise ValueError(f"uuid must be 1 to {MAX_UUID_CHARS} characters")
        body = {
            "receive_id": receive_id,
            "msg_type": "interactive",
            "content": card_to_content(card),
            "uuid": uuid,
        }
        data = await self._call(
            "POST",
            MESSAGES_PATH,
            params={"receive_id_type": receive_id_type},
            json=body,
            what="sending a card",
        )
        message_id = data.get("message_id")
        if not isinstance(message_id, str) or not message_id:
            raise FeishuError("Feishu accepted the card but returned no message_id")
        return message_id

    async def update_card(self, *, message_id: str, card: Mapping[str, Any]) -> None:
        """Replace a sent card for everyone (both cards need ``config.update_multi: true``)."""
        path = f"{MESSAGES_PATH}/{quote(message_id, safe='')}"
        await self._call("PATCH", path, json={"content": card_to_content(card)}, what="updating a card")

    async def delayed_update(self, *, token: str, card: Mapping[str, Any]) -> None:
        """Replace the clicked card with the callback's update token (valid 30 minutes, twice)."""
        card_to_content(card)  # the size check
        await self._call(
            "POST",
            DELAYED_UPDATE_PATH,
            json={"token": token, "card": dict(card)},
            what="updating a card after a click",
        )

    # transport

    async def _call(
        self, method: str, path: str, *, json: dict[str, Any], what: str, params: dict[str, str] | None = None
    ) -> dict[str, Any]:
        token = await self.tenant_access_token()
        status, reply, headers = await self._send(method, path, json=json, params=params, token=token)
        if _body_code(reply) in TOKEN_CODES:
            logger.info("Feishu rejected the cached token of app %s; fetching a new one", self.app.app_id)
            self._drop_token(token)
            token = await self.tenant_access_token()
            status, reply, headers = await self._send(method, path, json=json, params=params, token=token)
        return self._check(status, reply, headers, what=what)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        json: dict[str, Any],
        token: str | None,
        params: dict[str, str] | None = None,
    ) -> tuple[int, Any, httpx.Headers]:
        http = self._http or _shared_http(self.app, self._base)
        headers = {"Content-Type": "application/json; charset=utf-8"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = await http.request(
                method, self._base + path, json=json, params=params, headers=headers, timeout=self._timeout
            )
        except SSRFBlocked as exc:  # nothing was sent; retrying cannot help
            raise FeishuError(f"the Feishu base URL is {exc}", retryable=False) from exc
        except httpx.TimeoutException as exc:
            raise FeishuError(f"Feishu did not answer {method} {path} in time", retryable=True) from exc
        except httpx.TransportError as exc:
            raise FeishuError(
                f"could not reach Feishu for {method} {path}: {type(exc).__name__}", retryable=True
            ) from exc
        try:
            reply = response.json()
        except ValueError:
            reply = None
        return response.status_code, reply, response.headers

    def _check(self, status: int, reply: Any, headers: httpx.Headers, *, what: str) -> dict[str, Any]:
        code = _body_code(reply)
        msg = reply.get("msg", "") if isinstance(reply, dict) else ""
        if status == 429 or code == RATE_LIMITED:
            retry_after = _retry_after(headers)
            logger.warning(
                "Feishu rate limited app %s while %s (retry after %ss)", self.app.app_id, what, retry_after
            )
            raise FeishuError(
                f"Feishu rate limited {what} (code {code}); retry after {retry_after}s",
                code=code,
                http_status=status,
                retry_after=retry_after,
                retryable=True,
            )
        if status >= 500:
            raise FeishuError(
                f"Feishu failed {what}: HTTP {status}, code {code}",
                code=code,
                http_status=status,
                retryable=True,
            )
        if code is None:
            raise FeishuError(
                f"Feishu answered {what} with HTTP {status} and no JSON body code", http_status=status
            )
        if code != 0:
            logger.warning("Feishu error %s while %s for app %s: %s", code, what, self.app.app_id, msg)
            raise FeishuError(
                f"Feishu error {code} while {what}: {code_meaning(code)} (Feishu says: {msg})",
                code=code,
                http_status=status,
            )
        if not 200 <= status < 300:
            raise FeishuError(f"Feishu answered {what} with HTTP {status}", code=code, http_status=status)
        data = reply.get("data") if "data" in reply else reply
        return data if isinstance(data, dict) else {}


def _body_code(reply: Any) -> int | None:
    code = reply.get("code") if isinstance(reply, dict) else None
    return code if isinstance(code, int) and not isinstance(code, bool) else None


def _retry_after(headers: httpx.Headers) -> float | None:
    raw = headers.get("x-ogw-ratelimit-reset")
    try:
        value = float(raw) if raw is not None else None
    except ValueError:
        return None
    return max(value, 0.0) if value is not None else None
