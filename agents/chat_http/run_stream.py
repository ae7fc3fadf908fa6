"""A run's stream as Server-Sent Events bytes: the reconnect delay, then the run's frames (replayed, then
live) and heartbeats until its ``done``. A stream opened with an API key ends as soon as the key is
revoked or expires, with an ``error`` event that says so (``api_key_revoked``, ``api_key_expired``)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

from django.utils import translation

from agents.chat_http.follow import Heartbeat, run_frames
from agents.chat_http.sse import sse_comment, sse_error, sse_frame, sse_retry
from platform_core.identity.api_keys.watch import KeyLapsed, KeyWatch, until_key_lapses


async def run_stream_sse(
    *,
    conversation_id: uuid.UUID,
    run_id: uuid.UUID,
    after_seq: int,
    watch: KeyWatch | None,
    language: str | None = None,
) -> AsyncIterator[bytes]:
    """The body of ``GET …/runs/<run_id>/stream/``."""
    yield sse_retry()
    frames = run_frames(conversation_id=conversation_id, run_id=run_id, after_seq=after_seq)
    async for item in until_key_lapses(frames, watch):
        if isinstance(item, KeyLapsed):
            with translation.override(language):
                yield sse_error(run_id=run_id, code=item.code, message=item.message)
            return
        yield sse_comment("heartbeat") if isinstance(item, Heartbeat) else sse_frame(item)
