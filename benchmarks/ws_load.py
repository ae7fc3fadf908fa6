"""Websocket load on ONE daphne process: N concurrent conversations on PostgreSQL and Redis.

    .venv/bin/python benchmarks/ws_load.py [--profile chat|burst] [--levels 10,50,200,500]

For each N a fresh daphne serves N conversations, each on its own authenticated socket. Every question is
a real run: the model (``benchmarks/streaming_llm.py``, its own process) waits before each of its calls,
the agent calls one ERP tool, and the final answer streams in chunks. Two load profiles:

- ``chat`` (default): people chatting with a model at production pace. Conversations join over 10 s; each
  asks 3 questions, reading the answer for 3–8 s before the next; the model takes 0.5–1.5 s before each
  call and streams the answer at 40 tokens/s (80 chunks, 25 ms apart).
- ``burst``: a stress test. Every conversation starts within 2 s and asks 2 questions 0.2–1 s apart of a
  fast model (0.2–0.8 s per call, 30 chunks 30 ms apart).

Each setting can be overridden (``--rounds``, ``--ramp``, ``--think``, ``--latency``, ``--tokens``,
``--token-interval``). Measured:

- event latency, model → client: each streamed chunk carries the wall-clock time the model wrote it;
  the client matches the ``answer`` delta (by ``seq``) that carries it and subtracts. It spans the whole
  path: SDK parsing, the engine, persisting (PostgreSQL), publishing (Redis), the consumer, the socket.
- event latency, stored → client: every event's ``created_at`` (set when its row is inserted) against
  the client's receive time of the same ``seq``, for all events, not only answer deltas.
- events per second delivered to the clients while the load runs.
- event-loop lag inside daphne: a separate small process pings over its own websocket every 100 ms;
  daphne's websocket protocol (autobahn on Twisted's asyncio reactor) answers the ping on the same event
  loop that runs the consumers and the runs, so the round trip is the loop's lag plus loopback.
- RSS of the daphne process (``/proc/<pid>/status``): after warm-up, with N idle sockets, and at the peak
  of the load (per idle socket, per active run).
- cancel: during the load, a separate conversation starts a run whose tool is still in flight (a 60 s
  ERP call), sends ``cancel`` and times the ``done`` event (``cancelled: true``). Three times per level.

Bounded: each level stops after ``--level-timeout`` seconds; loopback only. The client's own loop lag is
reported too: when it grows, the client (same 2 cores) inflates the latencies it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from websockets.asyncio.client import ClientConnection, connect  # noqa: E402
from websockets.exceptions import WebSocketException  # noqa: E402

from benchmarks.common import (  # noqa: E402
    BenchStack,
    free_port,
    machine_summary,
    median,
    percentile,
    process_cpu_seconds,
    process_rss_kib,
)
from platform_core.wiring.deploy.services import postgres_query  # noqa: E402

MARKER = re.compile(r"@(\d{19})")
PROBE_INTERVAL = 0.1
CANCELS_PER_LEVEL = 3


@dataclass
class Level:
    """What one level measured."""

    n: int
    runs: int = 0
    errors: list[str] = field(default_factory=list)
    frames: list[tuple[str, int, int, dict[str, Any]]] = field(
        default_factory=list
    )  # conv, seq, recv ns, frame
    started_ns: int = 0
    ended_ns: int = 0
    active: int = 0
    peak_active: int = 0
    rss_base: int = 0
    rss_idle: int = 0
    rss_peak: int = 0
    cpu_seconds: float = 0.0
    ping_ms: list[float] = field(default_factory=list)
    client_lag_ms: list[float] = field(default_factory=list)
    cancel_ms: list[float] = field(default_factory=list)
    cancel_ok: list[bool] = field(default_factory=list)


async def open_socket(base: str, conversation: str, token: str) -> ClientConnection:
    url = base.replace("http://", "ws://", 1) + f"/ws/conversations/{conversation}/"
    return await connect(
        url,
        additional_headers={"Authorization": f"Bearer {token}"},
        proxy=None,
        compression=None,
        ping_interval=None,
        max_queue=None,
        open_timeout=60,
    )


async def until_done(
    ws: ClientConnection, level: Level, conversation: str, *, record: bool
) -> dict[str, Any]:
    """Receive frames until this run's ``done``; returns it."""
    while True:
        raw = await ws.recv(decode=True)
        received = time.time_ns()
        frame = json.loads(raw)
        if frame.get("seq") is None:
            level.errors.append(str(frame.get("data", {}).get("code")))
            return frame
        if record:
            level.frames.append((conversation, frame["seq"], received, frame))
        if frame["event"] == "done":
            return frame


async def converse(
    ws: ClientConnection,
    conversation: str,
    level: Level,
    rounds: int,
    delay: float,
    rng: random.Random,
    think: tuple[float, float],
) -> None:
    await asyncio.sleep(delay)
    for number in range(rounds):
        if number:
            await asyncio.sleep(rng.uniform(*think))
        level.active += 1
        level.peak_active = max(level.peak_active, level.active)
        try:
            await ws.send(json.dumps({"type": "message", "content": f"Where is order {number + 7}?"}))
            done = await until_done(ws, level, conversation, record=True)
            if done.get("event") == "done":
                level.runs += 1
        finally:
            level.active -= 1


async def cancel_drill(base: str, conversation: str, token: str, level: Level, start_after: float) -> None:
    """Start a run whose tool hangs, cancel it once the tool is in flight, time the ``done``."""
    await asyncio.sleep(start_after)
    try:
        ws = await open_socket(base, conversation, token)
    except (OSError, WebSocketException) as exc:  # an overloaded daphne drops handshakes after 5 s
        level.errors.append(f"cancel drill: handshake failed ({type(exc).__name__})")
        return
    try:
        for _ in range(CANCELS_PER_LEVEL):
            await ws.send(json.dumps({"type": "message", "content": "Run the slow report."}))
            while True:
                frame = json.loads(await ws.recv(decode=True))
                data = frame.get("data") or {}
                if (
                    frame.get("event") == "step"
                    and data.get("type") == "iteration"
                    and data.get("status") == "start"
                ):
                    break
            sent = time.perf_counter()
            await ws.send(json.dumps({"type": "cancel"}))
            while True:
                frame = json.loads(await ws.recv(decode=True))
                if frame.get("event") == "done":
                    level.cancel_ms.append((time.perf_counter() - sent) * 1000)
                    level.cancel_ok.append(bool(frame["data"].get("cancelled")))
                    break
            await asyncio.sleep(0.5)
    finally:
        await ws.close()


async def sample_rss(pid: int, level: Level, stop: asyncio.Event) -> None:
    while not stop.is_set():
        level.rss_peak = max(level.rss_peak, process_rss_kib(pid))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.25)


async def client_lag(level: Level, stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        planned = loop.time() + 0.02
        await asyncio.sleep(0.02)
        level.client_lag_ms.append(max(0.0, (loop.time() - planned) * 1000))


def probe_main(base: str, conversation: str, token: str, stop: Any, results: Any) -> None:
    """Ping daphne over a websocket every 100 ms until ``stop`` is set; send the round trips (ms)."""

    async def run() -> list[float]:
        samples: list[float] = []
        try:
            ws = await open_socket(base, conversation, token)
        except (OSError, WebSocketException):  # an overloaded daphne drops handshakes after 5 s
            return samples
        try:
            while not stop.is_set():
                started = time.perf_counter()
                pong = await ws.ping()
                await asyncio.wait_for(pong, 30)
                samples.append((time.perf_counter() - started) * 1000)
                await asyncio.sleep(PROBE_INTERVAL)
        finally:
            await ws.close()
        return samples

    results.send(asyncio.run(run()))


async def run_level(stack: BenchStack, world: dict[str, Any], n: int, args: argparse.Namespace) -> Level:
    level = Level(n=n)
    token = world["token"]
    spare = world["conversations"][-3:]  # warm-up, probe, cancel drill
    conversations = world["conversations"][:n]
    daphne = stack.start_daphne(free_port())
    base = str(daphne.spec.base_url)
    try:
        warm = await open_socket(base, spare[0], token)
        await warm.send(json.dumps({"type": "message", "content": "Where is order 1?"}))
        await until_done(warm, level, spare[0], record=False)
        await warm.close()
        level.rss_base = process_rss_kib(daphne.pid)

        gate = asyncio.Semaphore(25)

        async def opened(conversation: str) -> ClientConnection:
            async with gate:
                return await open_socket(base, conversation, token)

        sockets = await asyncio.gather(*(opened(c) for c in conversations))
        await asyncio.sleep(1.0)  # let the server settle before reading its memory
        level.rss_idle = process_rss_kib(daphne.pid)
        level.rss_peak = level.rss_idle

        context = multiprocessing.get_context("spawn")
        stop_probe = context.Event()
        receive_end, send_end = context.Pipe(duplex=False)
        probe = context.Process(target=probe_main, args=(base, spare[1], token, stop_probe, send_end))
        probe.start()
        stop = asyncio.Event()
        background = [
            asyncio.create_task(sample_rss(daphne.pid, level, stop)),
            asyncio.create_task(client_lag(level, stop)),
        ]
        rng = random.Random(n)
        cpu_before = process_cpu_seconds(daphne.pid)
        level.started_ns = time.time_ns()
        try:
            async with asyncio.timeout(args.level_timeout):
                await asyncio.gather(
                    cancel_drill(base, spare[2], token, level, args.ramp / 2),
                    *(
                        converse(ws, c, level, args.rounds, rng.uniform(0, args.ramp), rng, args.think_range)
                        for ws, c in zip(sockets, conversations, strict=True)
                    ),
                )
        except TimeoutError:
            level.errors.append("level timed out")
        finally:
            level.ended_ns = time.time_ns()
            level.cpu_seconds = process_cpu_seconds(daphne.pid) - cpu_before
            stop.set()
            await asyncio.gather(*background, return_exceptions=True)
            stop_probe.set()
            if receive_end.poll(40):
                level.ping_ms = receive_end.recv()
            probe.join(10)
            if probe.is_alive():
                probe.kill()
            await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    finally:
        stack.stop_process(daphne)
    return level


def stored_latencies(stack: BenchStack, level: Level) -> list[float]:
    """Milliseconds from each event's insert (``created_at``) to the client receiving its ``seq``."""
    received = {(conv, seq): ns for conv, seq, ns, _ in level.frames}
    conversations = sorted({conv for conv, _, _, _ in level.frames})
    rows = postgres_query(
        stack.database_url,
        "SELECT conversation_id::text, seq, extract(epoch FROM created_at) FROM agents_runevent "
        "WHERE conversation_id::text = ANY(%s)",
        (conversations,),
    )
    return [
        (received[(conv, seq)] / 1e9 - float(created)) * 1000
        for conv, seq, created in rows
        if (conv, seq) in received
    ]


def model_latencies(level: Level) -> list[float]:
    """Milliseconds from the model writing a chunk to the client receiving the delta carrying it."""
    values = []
    for _, _, received, frame in level.frames:
        if frame["event"] == "answer" and frame["data"].get("status") == "delta":
            for stamp in MARKER.findall(str(frame["data"].get("content", ""))):
                values.append((received - int(stamp)) / 1e6)
    return values


def summarise(stack: BenchStack, level: Level) -> dict[str, Any]:
    model = model_latencies(level)
    stored = stored_latencies(stack, level)
    seconds = max(1e-9, (level.ended_ns - level.started_ns) / 1e9)
    active = max(1, level.peak_active)
    return {
        "n": level.n,
        "runs": level.runs,
        "errors": len(level.errors),
        "events": len(level.frames),
        "events_per_s": round(len(level.frames) / seconds, 1),
        "model_p50": round(percentile(model, 50), 1),
        "model_p99": round(percentile(model, 99), 1),
        "stored_p50": round(percentile(stored, 50), 1),
        "stored_p99": round(percentile(stored, 99), 1),
        "loop_lag_p50": round(percentile(level.ping_ms, 50), 1),
        "loop_lag_p99": round(percentile(level.ping_ms, 99), 1),
        "loop_lag_max": round(max(level.ping_ms, default=float("nan")), 1),
        "client_lag_p99": round(percentile(level.client_lag_ms, 99), 1),
        "daphne_cpu_pct": round(100 * level.cpu_seconds / seconds),
        "cpu_ms_per_run": round(1000 * level.cpu_seconds / max(1, level.runs + len(level.cancel_ms)), 1),
        "rss_base_mib": round(level.rss_base / 1024, 1),
        "kib_per_idle_socket": round((level.rss_idle - level.rss_base) / level.n, 1),
        "peak_active_runs": level.peak_active,
        "kib_per_active_run": round((level.rss_peak - level.rss_idle) / active, 1),
        "cancel_ms_median": round(median(level.cancel_ms), 1),
        "cancel_ms_max": round(max(level.cancel_ms, default=float("nan")), 1),
        "cancelled": f"{sum(level.cancel_ok)}/{len(level.cancel_ok)}",
        "seconds": round(seconds, 1),
    }


COLUMNS = [
    ("N", "n"),
    ("runs", "runs"),
    ("err", "errors"),
    ("events", "events"),
    ("ev/s", "events_per_s"),
    ("model→client p50/p99 ms", ("model_p50", "model_p99")),
    ("stored→client p50/p99 ms", ("stored_p50", "stored_p99")),
    ("loop lag p50/p99/max ms", ("loop_lag_p50", "loop_lag_p99", "loop_lag_max")),
    ("client lag p99", "client_lag_p99"),
    ("daphne CPU %", "daphne_cpu_pct"),
    ("CPU ms/run", "cpu_ms_per_run"),
    ("RSS MiB", "rss_base_mib"),
    ("KiB/idle sock", "kib_per_idle_socket"),
    ("KiB/active run", "kib_per_active_run"),
    ("cancel ms med/max", ("cancel_ms_median", "cancel_ms_max")),
    ("cancelled", "cancelled"),
]


def print_table(rows: list[dict[str, Any]]) -> None:
    def cell(row: dict[str, Any], key: Any) -> str:
        return "/".join(str(row[k]) for k in key) if isinstance(key, tuple) else str(row[key])

    table = [[title for title, _ in COLUMNS]] + [[cell(row, key) for _, key in COLUMNS] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    for index, line in enumerate(table):
        print("  ".join(value.rjust(width) for value, width in zip(line, widths, strict=True)))
        if index == 0:
            print("-" * (sum(widths) + 2 * (len(widths) - 1)))


def start_model(args: argparse.Namespace) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "benchmarks.streaming_llm",
            "--latency",
            args.latency,
            "--tokens",
            str(args.tokens),
            "--token-interval",
            str(args.token_interval),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline() if process.stdout else ""
    if not line:
        process.kill()
        raise SystemExit("the benchmark model did not start")
    return process, f"http://127.0.0.1:{json.loads(line)['port']}"


async def main_async(args: argparse.Namespace) -> None:
    levels = [int(x) for x in args.levels.split(",")]
    model, model_url = start_model(args)
    try:
        with BenchStack(extra_env={"AGENT_MAX_CONCURRENT_RUNS_PER_USER": "100000"}) as stack:
            world = stack.world(
                "benchmarks.world",
                "--llm",
                f"{model_url}/v1",
                "--erp",
                f"{model_url}/erp",
                "--conversations",
                str(max(levels) + 3),
            )
            rows = []
            for n in levels:
                level = await run_level(stack, world, n, args)
                rows.append(summarise(stack, level))
                if level.errors:
                    print(f"N={n}: errors {sorted(set(level.errors))}", file=sys.stderr)
                print(json.dumps(rows[-1]), flush=True)
    finally:
        model.kill()
        model.wait(10)
    print()
    print(f"machine: {machine_summary()}")
    print(
        f"model: {args.latency} s per call, {args.tokens} streamed chunks {args.token_interval * 1000:.0f} ms "
        f"apart; {args.rounds} questions per conversation, {args.think} s apart, starts spread over {args.ramp} s "
        f"(profile {args.profile})"
    )
    print()
    print_table(rows)


# chat: a model at production pace (0.5-1.5 s before each call's first token, the answer at 40 tokens/s),
# people who read the answer before asking again, conversations joining over 10 s.
# burst: every conversation asks at once and again right away, of a fast model (a stress test).
PROFILES: dict[str, dict[str, Any]] = {
    "chat": {
        "rounds": 3,
        "ramp": 10.0,
        "latency": "0.5,1.5",
        "tokens": 80,
        "token_interval": 0.025,
        "think": "3,8",
    },
    "burst": {
        "rounds": 2,
        "ramp": 2.0,
        "latency": "0.2,0.8",
        "tokens": 30,
        "token_interval": 0.03,
        "think": "0.2,1.0",
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="10,50,200,500")
    parser.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        default="chat",
        help="chat: people chatting with a production-like model; burst: every conversation at once, fast model",
    )
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--ramp", type=float)
    parser.add_argument("--latency")
    parser.add_argument("--tokens", type=int)
    parser.add_argument("--token-interval", type=float)
    parser.add_argument("--think", help="seconds a user pauses between questions: min,max")
    parser.add_argument("--level-timeout", type=float, default=180.0)
    args = parser.parse_args()
    for name, value in PROFILES[args.profile].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    low, high = (float(x) for x in args.think.split(","))
    args.think_range = (low, high)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
