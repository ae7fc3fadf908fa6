"""An event's JSON, encoded once: the text its ``RunEvent.data`` column stores and the text of its
websocket frame, which embeds the same data text.

Before, an event's data was serialised for the INSERT, its frame was built as a dict, msgpack-serialised
for the channel layer, deserialised in every receiving process and ``json.dumps``-ed once more per
socket. Now the writer makes both texts from one ``json.dumps`` of the data, the channel layer carries
the frame's text, and a socket sends it as it came.

Both texts are exactly what was made before: the stored text is
:func:`~agents.engine.strict_json.dumps_storable`'s, the frame's is ``json.dumps(frame,
ensure_ascii=False, default=str)`` with the keys in the order of DESIGN section 4 (``seq``, ``run_id``,
``event``, ``data``). The rare data that the two would encode differently (NaN, NUL, a lone surrogate,
a value that is not JSON) takes the two encodings separately.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agents.engine.strict_json import dumps_storable
from agents.sql import StorableJSON

# What makes dumps_storable leave json.dumps's text for its safe copy (the same test as there).
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")
# json.dumps(value, ensure_ascii=False, allow_nan=False) without a new encoder per call.
_DATA_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


@dataclass(frozen=True, slots=True)
class EventTexts:
    """The stored data of one event and its websocket frame, as text."""

    stored: StorableJSON
    frame: str


def frame_text(frame: Mapping[str, Any]) -> str:
    """A frame's text as the websocket sends it (a frame built as a dict: a replayed event, or one a
    process of the previous version published)."""
    return json.dumps(frame, ensure_ascii=False, default=str)


def event_texts(seq: int, run_id: uuid.UUID, event: str, data: Mapping[str, Any]) -> EventTexts:
    """The texts of one event, from one ``json.dumps`` of its data in the common case."""
    try:
        text = _DATA_ENCODER.encode(data)
    except (ValueError, TypeError, RecursionError):
        return _texts_apart(seq, run_id, event, data)
    if "\\u0000" in text or _SURROGATE_RE.search(text):
        return _texts_apart(seq, run_id, event, data)
    return EventTexts(StorableJSON(text), f'{{"seq": {int(seq)}{_after_seq(run_id, event)}{text}}}')


def _texts_apart(seq: int, run_id: uuid.UUID, event: str, data: Mapping[str, Any]) -> EventTexts:
    stored = StorableJSON(dumps_storable(data))
    frame = {"seq": seq, "run_id": str(run_id), "event": event, "data": data}
    try:
        return EventTexts(stored, frame_text(frame))
    except (ValueError, TypeError, RecursionError):  # not JSON even with str(): send what is stored
        return EventTexts(stored, frame_text({**frame, "data": json.loads(stored)}))


@lru_cache(maxsize=4096)
def _after_seq(run_id: uuid.UUID, event: str) -> str:
    """The frame's text between its seq and its data: the same for every event of a run's channel."""
    run = json.dumps(str(run_id), ensure_ascii=False)
    return f', "run_id": {run}, "event": {json.dumps(event, ensure_ascii=False)}, "data": '
