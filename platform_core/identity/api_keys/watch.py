"""Watching the API key a long-lived response was opened with (an HTTP event stream, an OpenAI-compatible
completion, an MCP request), so that it ends when the key stops being usable.

Two signals, so that neither a lost message nor a missed deadline keeps a stream open:

- **push**: the watcher's channel joins the key's revocation group (:func:`api_key_group`, the group the
  chat websocket joins); :func:`~platform_core.identity.api_keys.keys.api_key_revoke` announces there, in
  every server process that shares the channel layer (Redis), or in this one (the in-memory layer);
- **pull**: at the key's expiry, and every ``API_KEY_RECHECK_SECONDS`` (a Django setting, default 10), the
  watcher reads the key's state (off the event loop). This catches an expiry, a revocation made where the
  announcement cannot reach (another deployment's database, a bulk update, a deactivated user) and an
  announcement the layer lost.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_core.identity.api_keys.keys import api_key_group, api_key_state
from platform_core.identity.api_keys.scopes import ApiKeyCredential

REVOKED_MESSAGE_TYPE = "api_key.revoked"
T = TypeVar("T")

_key_state = database_sync_to_async(api_key_state)


def recheck_seconds() -> float:
    """How often an open stream re-reads its key's state (``API_KEY_RECHECK_SECONDS``, default 10)."""
    return max(0.1, float(getattr(settings, "API_KEY_RECHECK_SECONDS", 10)))


@dataclass(frozen=True, slots=True)
class KeyWatch:
    """The key to watch: its id and its expiry as authentication found it."""

    key_id: int
    expires_at: datetime | None = None

    @classmethod
    def of(cls, credential: ApiKeyCredential | None) -> KeyWatch | None:
        """The watch of a request's credential (``None``: not an API key, e.g. a browser's session)."""
        if credential is None:
            return None
        return cls(key_id=credential.key.pk, expires_at=credential.key.expires_at)


@dataclass(frozen=True, slots=True)
class KeyLapsed:
    """The key can no longer be used: ``revoked`` (or its user deactivated) or ``expired``."""

    key_id: int
    reason: Literal["revoked", "expired"]
    type: Literal["key_lapsed"] = "key_lapsed"

    @property
    def code(self) -> str:
        return f"api_key_{self.reason}"

    @property
    def message(self) -> str:
        if self.reason == "expired":
            return _("The API key has expired; this stream is closed.")
        return _("The API key was revoked; this stream is closed.")


def _seconds_until(expires_at: datetime | None, recheck: float) -> float:
    if expires_at is None:
        return recheck
    return max(0.0, min(recheck, (expires_at - timezone.now()).total_seconds()))


async def key_lapse(watch: KeyWatch) -> KeyLapsed:
    """Wait until the watched key is revoked or expires; say which."""
    layer = get_channel_layer()
    channel = None
    group = api_key_group(watch.key_id)
    if layer is not None:
        channel = await layer.new_channel("api-key-watch.")
        await layer.group_add(group, channel)
    try:
        while True:
            # Read first: a revocation announced before the group was joined is not missed.
            state = await _key_state(key_id=watch.key_id)
            if state != "live":
                return KeyLapsed(watch.key_id, state)
            wait = _seconds_until(watch.expires_at, recheck_seconds())
            if await _revocation_heard(layer, channel, wait):
                return KeyLapsed(watch.key_id, "revoked")
    finally:
        if layer is not None and channel is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(layer.group_discard(group, channel))


async def _revocation_heard(layer: Any, channel: str | None, seconds: float) -> bool:
    """Whether the revocation was announced within ``seconds``."""
    if layer is None or channel is None:
        await asyncio.sleep(seconds)
        return False
    try:
        async with asyncio.timeout(seconds):
            while True:
                message = await layer.receive(channel)
                if message.get("type") == REVOKED_MESSAGE_TYPE:
                    return True
    except TimeoutError:
        return False


async def until_key_lapses(
    items: AsyncIterator[T], watch: KeyWatch | None
) -> AsyncGenerator[T | KeyLapsed, None]:
    """``items`` while the key is usable; once it lapses, a :class:`KeyLapsed` and the end (``items`` is
    closed). Without a watch (a session), ``items`` as they are."""
    if watch is None:
        async for item in items:
            yield item
        return
    lapse = asyncio.ensure_future(key_lapse(watch))
    step: asyncio.Future[T] | None = None
    try:
        while True:
            step = asyncio.ensure_future(anext(items))
            await asyncio.wait({step, lapse}, return_when=asyncio.FIRST_COMPLETED)
            if lapse.done():  # a lapse wins over an item that came at the same moment
                yield lapse.result()
                return
            try:
                item = step.result()
            except StopAsyncIteration:
                return
            step = None
            yield item
    finally:
        for pending in (step, lapse):
            if pending is not None and not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await pending
        aclose = getattr(items, "aclose", None)
        if aclose is not None:
            await aclose()
