"""Websocket handshake authentication: the session cookie (browsers) or an API key (API clients).

Origin validation happens before this middleware (``platform_core.asgi``). A handshake that carries an
``Authorization`` header is judged by that header alone: an invalid, expired or revoked key leaves the
user anonymous, so the consumer closes with 4401 rather than falling back to a cookie. A key without the
``chat`` scope is accepted and closed at once with 4403; a handshake from an address that sent too many
wrong keys (:mod:`platform_core.identity.api_keys.throttle`), with 4429. A socket opened with a key is checked
again before every frame the client sends (but a cancel): once the key is revoked or expired, the socket
closes with 4401.
"""

from __future__ import annotations

import json
from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from django.contrib.auth.models import AnonymousUser

from platform_core.identity.api_keys.authentication import (
    KeyAuthentication,
    api_token_authenticate,
    bearer_token_from_header,
    throttled_message,
)
from platform_core.identity.api_keys.keys import api_key_is_live
from platform_core.identity.api_keys.scopes import Scope
from platform_core.identity.api_keys.throttle import KeyThrottled
from platform_core.request_meta import client_ip_from_scope

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_THROTTLED = 4429


@database_sync_to_async
def _credential_for(raw: str, ip_address: str | None) -> KeyAuthentication:
    return api_token_authenticate(raw, ip_address=ip_address)


_key_is_live = database_sync_to_async(api_key_is_live)


async def _refuse(receive: Any, send: Any, code: int, reason: str = "") -> None:
    """Accept the handshake and close it with ``code`` so the client can tell why."""
    message = await receive()
    if message.get("type") != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    close: dict[str, Any] = {"type": "websocket.close", "code": code}
    if reason:
        close["reason"] = reason
    await send(close)


class BearerTokenMiddleware:
    """A handshake with an ``Authorization`` header goes to ``inner`` with the key's user; any other to
    ``session_app`` (the cookie and session stack in front of the same ``inner``).

    A Bearer socket never passes through the session stack: nothing there is of use to it, and each of
    its layers keeps a copy of the scope (and a lazy session and user) for as long as the socket is open.
    """

    def __init__(self, inner: Any, session_app: Any = None) -> None:
        self.inner = inner
        self.session_app = session_app if session_app is not None else inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        header = _authorization(scope)
        if header is None:
            return await self.session_app(scope, receive, send)
        raw = bearer_token_from_header(header)
        credential = await _credential_for(raw, client_ip_from_scope(scope)) if raw else None
        if isinstance(credential, KeyThrottled):
            if scope.get("type") != "websocket":
                return await self.inner({**scope, "user": AnonymousUser()}, receive, send)
            return await _refuse(receive, send, CLOSE_THROTTLED, throttled_message(credential))
        scope = dict(scope)
        scope["auth_method"] = "bearer"
        scope["api_key"] = credential
        scope["user"] = credential.user if credential is not None else AnonymousUser()
        if credential is None or scope.get("type") != "websocket":
            return await self.inner(scope, receive, send)
        if not credential.allows(Scope.CHAT):
            return await _refuse(receive, send, CLOSE_FORBIDDEN)
        return await self.inner(scope, _checked_receive(receive, send, credential.key.pk), send)


def _authorization(scope: dict[str, Any]) -> bytes | None:
    """The handshake's (last) ``Authorization`` header."""
    found = None
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            found = bytes(value)
    return found


_SMALL_FRAME = 200


def _is_cancel(message: dict[str, Any]) -> bool:
    """A ``{"type": "cancel"}`` frame: stopping a run is always allowed, and must not wait for the
    database (the process's database thread may be busy)."""
    text = message.get("text")
    if not isinstance(text, str) or len(text) > _SMALL_FRAME:
        return False
    try:
        frame = json.loads(text)
    except ValueError:
        return False
    return isinstance(frame, dict) and frame.get("type") == "cancel"


def _checked_receive(receive: Any, send: Any, key_id: int) -> Any:
    """``receive`` that, before handing the consumer a client frame (but a cancel), checks the key is
    still live; if not, it closes the socket (4401) and tells the consumer the client went away."""

    async def checked() -> dict[str, Any]:
        message = await receive()
        if (
            message.get("type") == "websocket.receive"
            and not _is_cancel(message)
            and not await _key_is_live(key_id=key_id)
        ):
            await send({"type": "websocket.close", "code": CLOSE_UNAUTHENTICATED})
            return {"type": "websocket.disconnect", "code": CLOSE_UNAUTHENTICATED}
        return message

    return checked


def SessionOrTokenAuthMiddleware(inner: Any) -> Any:  # noqa: N802 - named like Channels' stacks
    """Bearer tokens when sent (judged alone), else Channels' session auth stack."""
    return BearerTokenMiddleware(inner, session_app=AuthMiddlewareStack(inner))
