"""CPU per event on the relay path after the event writer, in one process, with the tree's own code.

For each event: the writer's encoding of its ``data`` for the jsonb INSERT (``prep`` on PostgreSQL, then
psycopg's dumper, as the unnest array sends it), the publisher's channel-layer message (one run, one
frame), channels-redis's serialisation and deserialisation, and the consumer's ``run_event`` up to the
text handed to the transport (which encodes it as UTF-8 like autobahn). No database, no Redis, no event
loop: the same steps the daphne process runs, without their I/O.

Runs the tree it is started in (``PYTHONPATH=<tree>``): before the text relay, the message carried
``frames`` (dicts) and the consumer ``json.dumps``-ed each; after it, ``texts``.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/x PYTHONPATH=. python benchmarks/event_relay_cpu.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/bench_relay")

import django  # noqa: E402

django.setup()

from channels_redis.pubsub import RedisPubSubChannelLayer  # noqa: E402
from psycopg.adapt import PyFormat, Transformer  # noqa: E402

from agents.consumers import ConversationConsumer  # noqa: E402
from agents.models import RunEvent  # noqa: E402
from agents.runs.events.sql import PendingEvent  # noqa: E402
from agents.sql import prep  # noqa: E402

try:
    from agents.runs.events.relay import events_message
    from agents.runs.events.sql import events_data_params

    TEXT_RELAY = True
except ImportError:  # the tree before the text relay

    def events_data_params(events: list[PendingEvent]) -> list[Any]:  # its batch_write_fenced
        return [prep(RunEvent, "data", e.data) for e in events]

    TEXT_RELAY = False

EVENTS = {
    "delta": ("answer", {"status": "delta", "content": "@1764697876123456789 "}),
    "delta-text": ("answer", {"status": "delta", "content": " order **7** has shipped and 8 awaits"}),
    "iteration-done": (
        "step",
        {
            "type": "iteration",
            "status": "done",
            "iteration": 2,
            "tool_calls": [{"id": "c1", "name": "erp__order_status", "args": {"order_id": "7"}}],
            "usage": {"prompt_tokens": 812, "completion_tokens": 41, "total_tokens": 853},
            "elapsed": 0.412,
        },
    ),
}


class _Consumer(ConversationConsumer):
    """The real consumer's relay, with a transport that only encodes the text (as autobahn does)."""

    def __init__(self) -> None:
        self.last_sent_seq = 0
        self.sent = 0

    async def send(self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool = False):
        self.sent += len((text_data or "").encode("utf-8"))


def _run(coroutine: Any) -> None:
    try:
        coroutine.send(None)
    except StopIteration:
        return
    raise RuntimeError("the relay suspended")


def measure(kind: str, iterations: int) -> float:
    """Microseconds of CPU per event."""
    channel, data = EVENTS[kind]
    layer = RedisPubSubChannelLayer(hosts=["redis://127.0.0.1:6379/0"])
    transformer = Transformer()
    consumer = _Consumer()
    conversation, run = uuid.uuid4(), uuid.uuid4()
    start = time.process_time()
    for seq in range(1, iterations + 1):
        event = PendingEvent(conversation, run, seq, channel, dict(data))
        # the writer: the INSERT's jsonb parameter, dumped
        (value,) = events_data_params([event])
        transformer.get_dumper(value, PyFormat.TEXT).dump(value)
        # the publisher
        if TEXT_RELAY:
            message = events_message(event.run_id, [event.seq], [event.texts().frame])
        else:
            message = {"type": "run.event", "frames": [event.frame()]}
        payload = layer.serialize(message)
        # a receiving process, then the socket
        received = layer.deserialize(payload)
        _run(consumer.run_event(received))
    elapsed = time.process_time() - start
    assert consumer.last_sent_seq == iterations
    return elapsed / iterations * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    args = parser.parse_args()
    results = {}
    for kind in EVENTS:
        measure(kind, min(2000, args.iterations))  # warm
        results[kind] = statistics.median(measure(kind, args.iterations) for _ in range(args.rounds))
    if args.json:
        print(json.dumps({"text_relay": TEXT_RELAY, **results}))
        return
    print(f"text relay: {TEXT_RELAY}  ({sys.version.split()[0]})")
    for kind, micros in results.items():
        print(f"{kind:16s} {micros:7.2f} µs CPU per event")


if __name__ == "__main__":
    main()
