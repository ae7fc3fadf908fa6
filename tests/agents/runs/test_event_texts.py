"""An event's JSON is encoded once and is exactly what was made before: the stored data is
``dumps_storable``'s text, the frame is ``json.dumps(frame, ensure_ascii=False, default=str)`` with the
keys of DESIGN section 4 in order, whatever the data holds."""

from __future__ import annotations

import decimal
import json
import math
import uuid

import pytest

from agents.engine.strict_json import dumps_storable
from agents.runs.events.sql import PendingEvent
from agents.runs.events.texts import event_texts
from agents.sql import StorableJSON

RUN = uuid.UUID("5f0c6a52-2b7e-4d1c-9a57-0c2f3e0b9d11")

DATA = [
    pytest.param({"status": "delta", "content": "Order 7 has "}, id="answer-delta"),
    pytest.param({"status": "delta", "content": "订单 **7** 已发货 ✓"}, id="non-ascii"),
    pytest.param(
        {"type": "iteration", "status": "done", "n": 3, "ms": 12.5, "ok": True, "x": None}, id="scalars"
    ),
    pytest.param(
        {"tool_args": {"items": [{"sku": "A-1", "qty": 2}], "note": 'say "hi"\n\tback\\slash'}},
        id="nested-escapes",
    ),
    pytest.param({"value": math.nan}, id="nan"),
    pytest.param({"value": -math.inf}, id="-infinity"),
    pytest.param({"content": "before\x00after"}, id="nul"),
    pytest.param({"content": "lone \ud800 surrogate"}, id="lone-surrogate"),
    pytest.param({"content": "a literal \\u0000 in text"}, id="literal-backslash-u0000"),
    pytest.param({"amount": decimal.Decimal("12.50")}, id="not-json-decimal"),
    pytest.param({True: "bool key", 3: "int key", 2.5: "float key", None: "none key"}, id="non-string-keys"),
    pytest.param({"pair": (1, 2)}, id="tuple"),
    pytest.param({}, id="empty"),
]


def _frame_before(event: PendingEvent) -> str:
    return json.dumps(event.frame(), ensure_ascii=False, default=str)


@pytest.mark.parametrize("data", DATA)
def test_the_frame_text_is_byte_for_byte_what_the_socket_encoded_before(data):
    event = PendingEvent(uuid.uuid4(), RUN, 41, "answer", data)
    assert event.texts().frame == _frame_before(event)


@pytest.mark.parametrize("data", DATA)
def test_the_stored_text_is_what_dumps_storable_stored_before(data):
    event = PendingEvent(uuid.uuid4(), RUN, 41, "answer", data)
    stored = event.texts().stored
    assert isinstance(stored, StorableJSON)
    assert stored == dumps_storable(data)


def test_the_frame_keys_come_in_the_contracts_order():
    frame = json.loads(event_texts(7, RUN, "step", {"type": "thinking"}).frame)
    assert list(frame) == ["seq", "run_id", "event", "data"]
    assert frame == {"seq": 7, "run_id": str(RUN), "event": "step", "data": {"type": "thinking"}}


def test_data_that_is_not_json_even_with_str_is_sent_as_it_is_stored():
    circular: dict = {}
    circular["self"] = circular
    texts = event_texts(3, RUN, "step", {"loop": circular})
    assert json.loads(texts.frame)["data"] == json.loads(texts.stored)


def test_the_texts_are_encoded_once_and_shared():
    event = PendingEvent(uuid.uuid4(), RUN, 1, "answer", {"status": "delta", "content": "x"})
    assert event.texts() is event.texts()
