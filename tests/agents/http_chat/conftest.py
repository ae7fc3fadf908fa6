"""Chat over HTTP against a real daphne server on loopback, in this process (``live_server_url``, in
``tests/agents/conftest.py``): the purchasing world and a parser of Server-Sent Events."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from connectors.tools import connector_tools_for_run
from tests.hooks.scenario import Purchasing, build_purchasing, hold_large_payments

PAYMENT = {"amount": 60000, "currency": "CNY"}


@pytest.fixture
def purchasing(transactional_db, scripted_llm, erp, monkeypatch) -> Purchasing:
    """The purchasing organisation (an ERP connector on the loopback service; payments over 50,000 need
    the approver april), its connector tools as the runs' tools."""
    from agents import runtime

    monkeypatch.setattr(runtime, "connector_tools_for_run", connector_tools_for_run)
    world = build_purchasing(llm_base_url=scripted_llm.base_url, erp_base_url=erp.base_url)
    hold_large_payments(world)
    return world


@dataclass
class SSEEvent:
    id: str | None = None
    event: str | None = None
    data: str = ""
    comments: list[str] = field(default_factory=list)

    @property
    def json(self) -> Any:
        return json.loads(self.data)


def sse_events(lines: Iterator[str]) -> Iterator[SSEEvent]:
    """Parse a text/event-stream (https://html.spec.whatwg.org/multipage/server-sent-events.html): yields
    each dispatched event; comment-only blocks come as events with ``comments`` and no data."""
    current = SSEEvent()
    started = False
    for line in lines:
        if line == "":
            if started:
                yield current
            current, started = SSEEvent(), False
            continue
        started = True
        if line.startswith(":"):
            current.comments.append(line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            current.data = f"{current.data}\n{value}" if current.data else value
        elif name in ("id", "event"):
            setattr(current, name, value)
    if started:
        yield current


def wait_for(condition: Callable[[], Any], timeout: float = 15.0) -> Any:
    """Poll ``condition`` until it returns something truthy (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")
