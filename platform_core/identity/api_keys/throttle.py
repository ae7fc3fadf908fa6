"""Failed API key authentications, counted per client address in the project's cache (Redis in
production, local memory in the embedded defaults).

An address that presents ``API_KEY_FAILURES_PER_ADDRESS`` unknown, revoked or expired keys within one
window of ``API_KEY_FAILURE_WINDOW_SECONDS`` is refused on every entry point that accepts keys (429 with
``Retry-After``; the websocket closes with 4429) until the window ends, whatever key it sends then: a
guesser must not learn that a guess was right. Successful authentications are not counted, so a client
with a good key is never slowed by its own traffic. ``0`` turns the throttle off.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

_PREFIX = "api-key-failures"


@dataclass(frozen=True, slots=True)
class KeyThrottled:
    """Too many failed keys from the caller's address: retry after ``retry_after`` seconds."""

    retry_after: int


def _limits() -> tuple[int, int]:
    return (
        int(getattr(settings, "API_KEY_FAILURES_PER_ADDRESS", 20)),
        max(1, int(getattr(settings, "API_KEY_FAILURE_WINDOW_SECONDS", 600))),
    )


def _window(window: int, now: float) -> tuple[int, int]:
    """The current fixed window's number and the seconds left in it (at least one)."""
    number = int(now // window)
    return number, max(1, math.ceil((number + 1) * window - now))


def _cache_key(address: str | None, number: int) -> str:
    # Callers without a known address (a unix socket, say) share one count rather than go uncounted.
    return f"{_PREFIX}:{address or 'unknown'}:{number}"


def api_key_failures_throttled(*, ip_address: str | None) -> KeyThrottled | None:
    """Whether ``ip_address`` is refused now (one cache read); ``None``: it may try a key."""
    limit, window = _limits()
    if limit <= 0:
        return None
    number, left = _window(window, time.time())
    failures = cache.get(_cache_key(ip_address, number)) or 0
    return KeyThrottled(retry_after=left) if failures >= limit else None


def api_key_failure_record(*, ip_address: str | None) -> None:
    """Count one failed key from ``ip_address`` in the current window."""
    limit, window = _limits()
    if limit <= 0:
        return
    number, left = _window(window, time.time())
    key = _cache_key(ip_address, number)
    if not cache.add(key, 1, timeout=left + 1):
        try:
            cache.incr(key)
        except ValueError:  # expired between the two calls: this failure opens the window again
            cache.add(key, 1, timeout=left + 1)
