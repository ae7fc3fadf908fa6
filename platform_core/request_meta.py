"""Facts about the caller of a request that audit rows record and throttles count by."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest


def _first_hop(forwarded: str) -> str | None:
    return forwarded.split(",")[0].strip() or None


def client_ip(request: Any) -> str | None:
    """The caller's IP: ``X-Forwarded-For``'s first hop only behind a proxy we were told to trust."""
    meta = getattr(request, "META", {})
    if getattr(settings, "TRUST_X_FORWARDED_FOR", False):
        forwarded = meta.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            return _first_hop(forwarded)
    return meta.get("REMOTE_ADDR") or None


def client_ip_from_scope(scope: dict[str, Any]) -> str | None:
    """:func:`client_ip` for an ASGI scope (websocket handshakes, MCP): the same rule, the same answer."""
    if getattr(settings, "TRUST_X_FORWARDED_FOR", False):
        forwarded = b",".join(v for k, v in scope.get("headers") or () if k == b"x-forwarded-for")
        if forwarded:
            return _first_hop(forwarded.decode("latin-1"))
    client = scope.get("client")
    return str(client[0]) if client else None


def signed_in_user(request: HttpRequest) -> User:
    """The signed-in user of a request that only signed-in users reach (the admin, ``login_required``
    views): an anonymous one is refused here rather than passed on as an actor."""
    user = request.user
    if not isinstance(user, User) or not user.is_authenticated:
        raise PermissionDenied
    return user
