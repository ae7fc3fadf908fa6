"""The channel-layer message that carries a run's persisted events to the sockets and HTTP streams of
its conversation.

It holds each frame's text, as a socket sends it (:mod:`agents.runs.events.texts`), and its seq, so a
receiver skips what it has and notices a gap without decoding anything; all frames of one message are of
one run (``run_id``). A process of the previous version published the frames as dicts (``"frames"``, or
one ``"frame"``): receivers still take those during a rolling deploy.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from agents.runs.events.texts import frame_text

EVENT_MESSAGE_TYPE = "run.event"

#: One frame of a message: its seq, its run id, and its text (or, from an older publisher, its dict).
Relayed = tuple[Any, Any, str | dict[str, Any]]


def events_message(run_id: uuid.UUID | str, seqs: list[int], texts: list[str]) -> dict[str, Any]:
    """The message of one run's frames (``texts``, with their ``seqs``), in order."""
    return {"type": EVENT_MESSAGE_TYPE, "run_id": str(run_id), "seqs": seqs, "texts": texts}


def message_texts(message: Mapping[str, Any]) -> list[tuple[int, str]]:
    """``(seq, text)`` of every frame of ``message`` (a socket sends the text as it is)."""
    texts = message.get("texts")
    if texts is not None:
        return list(zip(message["seqs"], texts, strict=True))
    return [(frame["seq"], frame_text(frame)) for frame in _old_frames(message)]


def message_relayed(message: Mapping[str, Any]) -> list[Relayed]:
    """``(seq, run_id, text or dict)`` of every frame of ``message``, for a receiver that filters by run
    and decodes only the frames it takes."""
    texts = message.get("texts")
    if texts is not None:
        run_id = message.get("run_id")
        return [(seq, run_id, text) for seq, text in zip(message["seqs"], texts, strict=True)]
    return [(frame.get("seq"), frame.get("run_id"), frame) for frame in _old_frames(message)]


def _old_frames(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    return message.get("frames") or [message.get("frame") or {}]
