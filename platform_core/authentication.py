"""``Authorization: Bearer <token>`` for the REST API."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions

from platform_core.models import ApiToken


def bearer_token_from_header(value: str | bytes | None) -> str | None:
    """The token in an ``Authorization`` header value, or None when it is not a Bearer header."""
    if not value:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def api_token_authenticate(raw: str) -> ApiToken | None:
    """The live token for ``raw``, recording its use; None when unknown, revoked or its user inactive."""
    token = ApiToken.lookup(raw)
    if token is not None:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    return token


class BearerTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        raw = bearer_token_from_header(header)
        if raw is None:
            return None
        token = api_token_authenticate(raw)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
