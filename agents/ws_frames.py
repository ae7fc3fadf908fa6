"""Decoding of client websocket frames: strict JSON objects of bounded size, or a typed refusal.

The consumer answers a :class:`FrameRefused` with an ``error`` frame and keeps the socket open; nothing a
client sends (oversized, not JSON, non-finite numbers, nesting deep enough to exhaust Python's recursion
limit) may raise out of the consumer, which would close the socket with 1011.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from django.utils.translation import gettext as _

# The application's limit; the transport (daphne) accepts larger messages so that these get a clear error
# instead of a dropped connection (platform_core.wiring.deploy.stack.WEBSOCKET_TRANSPORT_MAX_BYTES).
MAX_FRAME_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class FrameDecoded:
    """A client frame that is a JSON object."""

    frame: dict[str, Any]
    type: Literal["decoded"] = "decoded"


@dataclass(frozen=True, slots=True)
class FrameRefused:
    """A client frame that cannot be used, with the error to send back."""

    code: str
    message: str
    type: Literal["refused"] = "refused"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def frame_decode(text_data: str | None) -> FrameDecoded | FrameRefused:
    """Decode one client frame (text only, at most :data:`MAX_FRAME_BYTES`, a strict JSON object)."""
    if text_data is None or len(text_data.encode()) > MAX_FRAME_BYTES:
        return FrameRefused("bad_frame", _("Frames must be JSON text of at most 256 KB."))
    try:
        frame = json.loads(text_data, parse_constant=_refuse_constant)
    except RecursionError:
        return FrameRefused("bad_frame", _("The frame is nested too deeply."))
    except ValueError:
        return FrameRefused("bad_frame", _("The frame is not valid JSON."))
    if not isinstance(frame, dict):
        return FrameRefused("bad_frame", _("The frame must be a JSON object."))
    return FrameDecoded(frame)


def after_seq_parse(value: Any) -> int | FrameRefused:
    """``resume``'s ``after_seq`` as a whole number of at least 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return FrameRefused("bad_frame", _("after_seq must be a non-negative whole number."))
    return value


def after_seq_within(after_seq: int, *, newest: int) -> int | FrameRefused:
    """``after_seq`` if the conversation has reached it (a position past the newest event would make the
    socket skip every event to come)."""
    if after_seq > newest:
        return FrameRefused(
            "bad_frame",
            _("after_seq is past the newest event of this conversation (%(newest)d).") % {"newest": newest},
        )
    return after_seq
