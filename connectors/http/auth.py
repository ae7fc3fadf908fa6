"""Authentication headers and query parameters for HTTP connectors, with an OAuth2 token cache.

OAuth2 client-credentials tokens are cached per connector (and per client id, secret, scope and
token URL, so changing any of them fetches a new token). A token is refreshed shortly before it
expires, and once more when the API answers 401 (the caller forces that refresh).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from dataclasses import dataclass
from urllib.parse import urljoin

import httpx

from connectors.adapter_types import HttpAuth, HttpConnectorConfig
from connectors.http.body import excerpt, read_capped
from connectors.loop_cache import PerLoop
from connectors.scrub import basic_credentials, scrub
from connectors.ssrf import SSRFBlocked

_TOKEN_RESPONSE_CAP = 64 * 1024
_DEFAULT_TOKEN_LIFETIME = 300.0


class AuthError(Exception):
    """The credentials could not be obtained; ``failure`` says whether it counts against the circuit."""

    def __init__(self, message: str, *, failure: bool = False, blocked: bool = False) -> None:
        super().__init__(message)
        self.failure = failure
        self.blocked = blocked


@dataclass(frozen=True, slots=True)
class AuthMaterial:
    """What a request to the connector's own origin carries. Secret: never logged or returned."""

    headers: tuple[tuple[str, str], ...] = ()
    query: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class _Token:
    value: str
    refresh_at: float


def _now() -> float:
    return time.monotonic()


_tokens: dict[tuple[str, ...], _Token] = {}
_tokens_lock = threading.Lock()
_fetch_locks: PerLoop[dict[tuple[str, ...], asyncio.Lock]] = PerLoop(dict)


def _token_key(config: HttpConnectorConfig) -> tuple[str, ...]:
    auth = config.auth
    secret_hash = hashlib.sha256(auth.client_secret.encode()).hexdigest()
    return (
        config.connector_id,
        auth.token_url,
        auth.client_id,
        auth.scope,
        auth.token_auth_method,
        secret_hash,
    )


def cached_token(config: HttpConnectorConfig) -> str:
    """The connector's cached access token ('' if none), so callers can redact it."""
    with _tokens_lock:
        token = _tokens.get(_token_key(config))
    return token.value if token else ""


def forget_token(config: HttpConnectorConfig) -> None:
    """Drop the cached token, so the next request fetches a new one."""
    with _tokens_lock:
        _tokens.pop(_token_key(config), None)


def forget_all_tokens() -> None:
    with _tokens_lock:
        _tokens.clear()


def secrets_of(config: HttpConnectorConfig) -> tuple[str, ...]:
    """Every secret a request of this connector may carry (including derived ones), for redaction."""
    auth = config.auth
    values = list(auth.secret_values())
    if auth.type == "basic" and (auth.username or auth.password):
        values.append(basic_credentials(auth.username, auth.password))
    if auth.type == "oauth2_client_credentials":
        values.append(basic_credentials(auth.client_id, auth.client_secret))
        values.append(cached_token(config))
    return tuple(v for v in values if v)


def _lifetime(payload: dict) -> float:
    raw = payload.get("expires_in")
    try:
        lifetime = float(raw) if raw is not None else _DEFAULT_TOKEN_LIFETIME
    except (TypeError, ValueError):
        lifetime = _DEFAULT_TOKEN_LIFETIME
    return max(0.0, lifetime)


async def _fetch_token(client: httpx.AsyncClient, config: HttpConnectorConfig) -> _Token:
    auth = config.auth
    if not auth.token_url or not auth.client_id:
        raise AuthError("OAuth2 client credentials need a token URL and a client id")
    url = urljoin(config.base_url, auth.token_url)
    data = {"grant_type": "client_credentials"}
    if auth.scope:
        data["scope"] = auth.scope
    headers = {"Accept": "application/json"}
    if auth.token_auth_method == "client_secret_post":
        data.update(client_id=auth.client_id, client_secret=auth.client_secret)
    else:
        headers["Authorization"] = "Basic " + basic_credentials(auth.client_id, auth.client_secret)
    timeout = httpx.Timeout(config.read_timeout, connect=config.connect_timeout)
    host = httpx.URL(url).host
    try:
        request = client.build_request("POST", url, data=data, headers=headers, timeout=timeout)
        response = await client.send(request, stream=True)
        try:
            body, _ = await read_capped(response, _TOKEN_RESPONSE_CAP)
        finally:
            await response.aclose()
    except SSRFBlocked as exc:
        raise AuthError(f"OAuth2 token URL {exc}", blocked=True) from exc
    except httpx.TimeoutException as exc:
        raise AuthError(f"OAuth2 token request to {host} timed out", failure=True) from exc
    except httpx.TransportError as exc:
        raise AuthError(f"OAuth2 token request to {host} failed: {exc}", failure=True) from exc
    secrets = auth.secret_values()
    if response.status_code != 200:
        detail = excerpt(scrub(body.decode("utf-8", errors="replace"), secrets), 200)
        raise AuthError(
            f"OAuth2 token request was refused: HTTP {response.status_code} {detail}".rstrip(),
            failure=response.status_code >= 500,
        )
    try:
        payload = json.loads(body)
    except ValueError:
        payload = None
    value = payload.get("access_token") if isinstance(payload, dict) else None
    if not isinstance(value, str) or not value:
        raise AuthError("OAuth2 token response has no access_token")
    lifetime = _lifetime(payload)
    # Refresh a little before expiry: a minute early for long-lived tokens, 10% early for short ones.
    return _Token(value=value, refresh_at=_now() + lifetime - min(60.0, lifetime * 0.1))


async def _oauth_token(client: httpx.AsyncClient, config: HttpConnectorConfig, *, force_refresh: bool) -> str:
    key = _token_key(config)
    with _tokens_lock:
        token = _tokens.get(key)
    if token and not force_refresh and _now() < token.refresh_at:
        return token.value
    lock = _fetch_locks.get().setdefault(key, asyncio.Lock())
    async with lock:
        with _tokens_lock:
            current = _tokens.get(key)
        # Another task may have refreshed it while this one waited for the lock.
        if current and current is not token and _now() < current.refresh_at:
            return current.value
        fresh = await _fetch_token(client, config)
        with _tokens_lock:
            _tokens[key] = fresh
        return fresh.value


async def auth_material(
    client: httpx.AsyncClient, config: HttpConnectorConfig, *, force_refresh: bool = False
) -> AuthMaterial:
    """Headers and query parameters of the connector's auth scheme (fetching an OAuth2 token if needed)."""
    auth: HttpAuth = config.auth
    if auth.type == "api_key_header":
        return AuthMaterial(headers=((auth.api_key_name or "X-API-Key", auth.api_key),))
    if auth.type == "api_key_query":
        return AuthMaterial(query=((auth.api_key_name or "api_key", auth.api_key),))
    if auth.type == "bearer":
        return AuthMaterial(headers=(("Authorization", f"Bearer {auth.token}"),))
    if auth.type == "basic":
        return AuthMaterial(
            headers=(("Authorization", "Basic " + basic_credentials(auth.username, auth.password)),)
        )
    if auth.type == "oauth2_client_credentials":
        token = await _oauth_token(client, config, force_refresh=force_refresh)
        return AuthMaterial(headers=(("Authorization", f"Bearer {token}"),))
    return AuthMaterial()
