"""Websocket handshake authentication: the session cookie (browsers) or a Bearer token (API clients).

Origin validation happens before this middleware (``platform_core.asgi``). A handshake that carries an
``Authorization`` header is judged by that header alone: an invalid token leaves the user anonymous, so
the consumer closes with 4401 rather than falling back to a cookie.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware
from django.contrib.auth.models import AnonymousUser

from platform_core.authentication import api_token_authenticate, bearer_token_from_header


@database_sync_to_async
def _user_for_token(raw: str) -> Any:
    token = api_token_authenticate(raw)
    return token.user if token is not None else AnonymousUser()


class BearerTokenMiddleware(BaseMiddleware):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        headers = dict(scope.get("headers") or [])
        header = headers.get(b"authorization")
        if header is not None:
            raw = bearer_token_from_header(header)
            scope = dict(scope)
            scope["user"] = await _user_for_token(raw) if raw else AnonymousUser()
            scope["auth_method"] = "bearer"
        return await super().__call__(scope, receive, send)


def SessionOrTokenAuthMiddleware(inner: Any) -> Any:  # noqa: N802 - named like Channels' stacks
    """Channels' session auth stack with Bearer tokens taking precedence when sent."""
    return AuthMiddlewareStack(BearerTokenMiddleware(inner))
