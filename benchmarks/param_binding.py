"""The CPU of sending one event-writer-shaped batch to PostgreSQL, bound three ways.

    .venv/bin/python benchmarks/param_binding.py [--events 40] [--runs 10] [--repeat 500]

One statement with the shapes of the event writer's batch (``agents/runs/events/sql.py``): arrays of
run ids, seqs, event names, JSON texts with quotes, newlines and non-ASCII, timestamps, and a jsonb array
with NULLs. Sent on the benchmark server's ``postgres`` database (``BENCH_POSTGRES_URL``), nothing
written:

- ``client``: psycopg's ``ClientCursor`` (what Django's cursor is): every parameter rendered as a quoted
  SQL literal in Python, each array element escaped;
- ``server %s``: bound by the server, parameters dumped in text (psycopg's text array dumper, in Python);
- ``server %b``: bound by the server in binary (what ``agents.sql.binary_cursor`` does).

Each row: this thread's CPU and the wall time per statement (medians of 5 blocks of ``--repeat``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import POSTGRES_URL, machine_summary  # noqa: E402


def batch(events: int, runs: int) -> list[Any]:
    """The parameters of one batch: ``events`` events spread over ``runs`` runs."""
    run_ids = [uuid.uuid4() for _ in range(runs)]
    now = datetime.now(UTC)
    data = {
        "type": "iteration",
        "status": "start",
        "thought": 'Looking up "order" 7, then the customer\'s address — 地址\n',
        "calls": [{"name": "orders_get", "arguments": {"id": 7, "fields": ["status", "eta"]}}],
    }
    texts = [json.dumps({**data, "n": i}, ensure_ascii=False) for i in range(events)]
    return [
        [run_ids[i % runs] for i in range(events)],
        list(range(events)),
        ["step"] * events,
        [Jsonb(text, dumps=str) for text in texts],
        [now] * events,
        [Jsonb(texts[0], dumps=str) if i % 3 == 0 else None for i in range(runs)],
    ]


def statement(placeholder: str) -> str:
    p = placeholder
    return (
        f"SELECT (SELECT count(*) FROM unnest({p}::uuid[], {p}::integer[], {p}::varchar[], {p}::jsonb[], "
        f"{p}::timestamptz[])), (SELECT count(*) FROM unnest({p}::jsonb[]))"
    )


def measure(execute: Callable[[], None], repeat: int) -> tuple[float, float]:
    """Median CPU and wall microseconds per call over 5 blocks of ``repeat`` calls (after a warm-up)."""
    for _ in range(repeat // 10 + 1):
        execute()
    cpu, wall = [], []
    for _ in range(5):
        c0, w0 = time.thread_time(), time.perf_counter()
        for _ in range(repeat):
            execute()
        cpu.append(1e6 * (time.thread_time() - c0) / repeat)
        wall.append(1e6 * (time.perf_counter() - w0) / repeat)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=500)
    args = parser.parse_args()
    params = batch(args.events, args.runs)
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        ways = [
            ("client", psycopg.ClientCursor(conn), statement("%s")),
            ("server %s", psycopg.Cursor(conn), statement("%s")),
            ("server %b", psycopg.Cursor(conn), statement("%b")),
        ]
        print(f"machine: {machine_summary()}")
        print(f"{args.events} events over {args.runs} runs per statement, {args.repeat} statements per block")
        print(f"{'binding':<10} {'CPU µs/statement':>17} {'wall µs/statement':>18}")
        for name, cursor, sql in ways:
            counted = cursor.execute(sql, params).fetchone()
            assert counted == (args.events, args.runs), counted

            def execute(cursor: psycopg.Cursor[Any] = cursor, sql: str = sql) -> None:
                cursor.execute(sql, params).fetchone()

            cpu, wall = measure(execute, args.repeat)
            print(f"{name:<10} {cpu:>17.1f} {wall:>18.1f}")


if __name__ == "__main__":
    main()
