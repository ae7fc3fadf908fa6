"""Server-Sent Events encoding of the conversation stream (https://html.spec.whatwg.org/multipage/server-sent-events.html).

A stored frame goes out as ``id: <seq>``, ``event: <channel>`` and ``data:`` the frame itself, exactly the
JSON object the websocket sends, so both transports carry the same payloads and the same ``seq``. A
client that reconnects sends the last ``id`` it saw as ``Last-Event-ID`` and gets everything after it.
Heartbeats are comment lines, which clients ignore.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from django.utils.translation import gettext as _

#: How long a reconnecting ``EventSource`` waits before it tries again (milliseconds).
RETRY_MS = 2000

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"


def sse_frame(frame: dict[str, Any]) -> bytes:
    """One persisted frame as an SSE event (``id`` = its seq, ``event`` = its channel)."""
    data = json.dumps(frame, ensure_ascii=False, default=str, separators=(",", ":"))
    return f"id: {frame['seq']}\nevent: {frame['event']}\ndata: {data}\n\n".encode()


def sse_data(payload: dict[str, Any] | str) -> bytes:
    """A nameless ``data:`` event (OpenAI's chunks and its ``[DONE]``)."""
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False, default=str)
    return f"data: {text}\n\n".encode()


def sse_error(*, run_id: object, code: str, message: str) -> bytes:
    """A socket-local error like the websocket's (``seq: null``, no ``id:``, so a reconnecting client's
    ``Last-Event-ID`` stays the last stored event's)."""
    frame = {"seq": None, "run_id": str(run_id), "event": "error", "data": {"code": code, "message": message}}
    data = json.dumps(frame, ensure_ascii=False, separators=(",", ":"))
    return f"event: error\ndata: {data}\n\n".encode()


def sse_comment(text: str) -> bytes:
    """A comment line: keeps proxies and clients from timing the stream out, ignored by parsers."""
    return f": {text}\n\n".encode()


def sse_retry() -> bytes:
    return f"retry: {RETRY_MS}\n\n".encode()


@dataclass(frozen=True, slots=True)
class PositionRefused:
    """A ``Last-Event-ID`` (or ``after_seq``) that is not a seq."""

    message: str
    type: Literal["refused"] = "refused"


def stream_position_parse(last_event_id: str | None, after_seq: str | None) -> int | PositionRefused:
    """Where a stream starts: after ``Last-Event-ID`` (the header wins) or ``?after_seq=``; 0 = from the
    run's first event."""
    raw = last_event_id if last_event_id not in (None, "") else after_seq
    if raw in (None, ""):
        return 0
    text = str(raw).strip()
    if not text.isdigit() or len(text) > 12:
        return PositionRefused(_("Last-Event-ID and after_seq must be a non-negative whole number."))
    return int(text)
