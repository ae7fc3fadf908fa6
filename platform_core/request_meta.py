"""Facts about the caller of a request that audit rows record."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def client_ip(request: Any) -> str | None:
    """The caller's IP: ``X-Forwarded-For``'s first hop only behind a proxy we were told to trust."""
    meta = getattr(request, "META", {})
    if getattr(settings, "TRUST_X_FORWARDED_FOR", False):
        forwarded = meta.get("HTTP_X_FORWARDED_FOR", "")
        if forwarded:
            return forwarded.split(",")[0].strip() or None
    return meta.get("REMOTE_ADDR") or None
