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
reported too: when it grows, the client (same 2 cores) inflates the latencies it measures. The exit status
is non-zero when a level left a question without its ``done``, a cancel without ``cancelled``, or had an
error (its figures then measure a broken run). Tiny, for ``make bench-smoke``: ``--levels 2 --rounds 1
--ramp 0.5 --think 0.1,0.2 --latency 0.05,0.1 --tokens 5 --token-interval 0.01``.

A/B in one invocation (``--ab accounting`` or ``--ab tracing``, ``--ab-rounds R``): each level runs 2·R
times, alternating off, on, off, on, each round with a fresh daphne and conversations of its own (no
history carried over), and the table compares the two sides: daphne's CPU per model call (the streaming
model counts its calls), event latency and RSS, medians and spread. The model endpoint has prices, so
"on" computes every call's cost.

- ``accounting``: off is the platform without usage accounting (``benchmarks/ws_load_wiring.py`` swaps it
  out of the scratch daphne: no meter, no budgets query, no ``UsageRecord`` rows); on is production.
  Checked: on-rounds write one costed row per model call, off-rounds none.
- ``tracing``: on sets ``OTEL_EXPORTER_OTLP_ENDPOINT`` to the benchmark model's process, which answers
  ``POST /v1/traces`` and counts the spans it gets (checked: on-rounds export spans, off-rounds none).

``--py-spy DIR`` samples the (first) daphne process of every round with py-spy during the load (raw stacks
in ``DIR``; ``python -m benchmarks.pyspy_share`` says which share was accounting and tracing): a share of
samples, unlike CPU seconds, hardly moves with what else the machine runs.

``--py-spy-gil`` (with ``--py-spy``) samples only the thread holding the interpreter's lock, each stack
under its thread's name: which thread runs Python, and what, rather than what waits. Every level also
reports the CPU seconds of each thread of the (first) daphne process over the load (``/proc``, named by
``py-spy dump`` when py-spy is installed): the event loop's ``MainThread``, the event writer's
``event-writer_0``, asgiref's database thread ``ThreadPoolExecutor-0_0``.

``--processes P`` spreads the conversations over P daphne processes sharing the Redis channel layer and
PostgreSQL (round-robin); CPU and RSS are summed over them, the loop-lag probe and the cancel drill use
the first.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
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
    postgres_execute,
    process_cpu_seconds,
    process_rss_kib,
    thread_cpu_seconds,
    thread_names,
    world_args,
)
from platform_core.wiring.deploy.services import postgres_query  # noqa: E402

MARKER = re.compile(r"@(\d{19})")
PROBE_INTERVAL = 0.1
CANCELS_PER_LEVEL = 3
WIRING = "benchmarks.ws_load_wiring:application"
# The benchmark endpoint's prices in --ab mode (per million tokens): every call's cost is computed.
PRICES = ("2.00", "0.50", "8.00", "USD")


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
    # CPU seconds of each thread of the (first) daphne process over the load, by the thread's name.
    thread_cpu: dict[str, float] = field(default_factory=dict)
    ping_ms: list[float] = field(default_factory=list)
    client_lag_ms: list[float] = field(default_factory=list)
    cancel_ms: list[float] = field(default_factory=list)
    cancel_ok: list[bool] = field(default_factory=list)
    side: str = ""
    model_calls: int = 0
    spans: int = 0
    usage_rows: int = 0
    usage_costed: int = 0


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


async def sample_rss(rss: Callable[[], int], level: Level, stop: asyncio.Event) -> None:
    while not stop.is_set():
        level.rss_peak = max(level.rss_peak, rss())
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


def model_stats(model_url: str) -> dict[str, int]:
    """What the benchmark model has counted so far: model calls and the spans exported to it."""
    with urllib.request.urlopen(f"{model_url}/stats", timeout=10) as response:  # loopback
        return json.loads(response.read())


def start_py_spy(directory: Path, pid: int, label: str, *, gil: bool = False) -> subprocess.Popen[bytes]:
    """Sample ``pid`` with py-spy (raw stacks, 50 Hz) into ``directory/<label>-<k>.txt`` until interrupted
    (read them with ``python -m benchmarks.pyspy_share``). ``gil``: only the thread holding the
    interpreter's lock, each stack under its thread's name (what runs Python, not what waits)."""
    directory.mkdir(parents=True, exist_ok=True)
    k = len(list(directory.glob(f"{label}-*.txt"))) + 1
    spy = Path(sys.executable).with_name("py-spy")
    argv = [str(spy), "record", "--pid", str(pid), "--format", "raw", "--rate", "50", "--nonblocking"]
    if gil:
        argv += ["--gil", "--threads"]
    argv += ["--output", str(directory / f"{label}-{k}.txt")]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def usage_rows(stack: BenchStack) -> tuple[int, int]:
    """``UsageRecord`` rows in the scratch database: all of them, and those with a cost."""
    ((rows, costed),) = postgres_query(
        stack.database_url, "SELECT count(*), count(cost) FROM agents_usagerecord"
    )
    return int(rows), int(costed)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Setup:
    """How one level's daphne processes are started."""

    processes: int = 1
    env: dict[str, str] | None = None
    application: str | None = None
    side: str = ""


async def run_level(
    stack: BenchStack,
    world: dict[str, Any],
    n: int,
    args: argparse.Namespace,
    model_url: str,
    setup: Setup = Setup(),
) -> Level:
    level = Level(n=n, side=setup.side)
    token = world["token"]
    spare = world["conversations"][-3:]  # warm-up, probe, cancel drill
    conversations = world["conversations"][:n]
    rows_before = usage_rows(stack)
    spans_before = model_stats(model_url)["spans"]
    daphnes = [
        stack.start_daphne(free_port(), env=setup.env, application=setup.application)
        for _ in range(setup.processes)
    ]
    bases = [str(daphne.spec.base_url) for daphne in daphnes]
    base = bases[0]
    pids = [daphne.pid for daphne in daphnes]

    def rss() -> int:
        return sum(process_rss_kib(pid) for pid in pids)

    def cpu() -> float:
        return sum(process_cpu_seconds(pid) for pid in pids)

    try:
        for index, address in enumerate(bases):
            warm = await open_socket(address, spare[0], token)
            await warm.send(json.dumps({"type": "message", "content": f"Where is order {index + 1}?"}))
            await until_done(warm, level, spare[0], record=False)
            await warm.close()
        level.rss_base = rss()

        gate = asyncio.Semaphore(25)

        async def opened(index: int, conversation: str) -> ClientConnection:
            async with gate:
                return await open_socket(bases[index % len(bases)], conversation, token)

        sockets = await asyncio.gather(*(opened(i, c) for i, c in enumerate(conversations)))
        await asyncio.sleep(1.0)  # let the server settle before reading its memory
        level.rss_idle = rss()
        level.rss_peak = level.rss_idle

        context = multiprocessing.get_context("spawn")
        stop_probe = context.Event()
        receive_end, send_end = context.Pipe(duplex=False)
        probe = context.Process(target=probe_main, args=(base, spare[1], token, stop_probe, send_end))
        probe.start()
        stop = asyncio.Event()
        background = [
            asyncio.create_task(sample_rss(rss, level, stop)),
            asyncio.create_task(client_lag(level, stop)),
        ]
        rng = random.Random(n)
        label = f"{n}-{setup.side or 'plain'}"
        spy = start_py_spy(args.py_spy, pids[0], label, gil=args.py_spy_gil) if args.py_spy else None
        calls_before = model_stats(model_url)["calls"]
        cpu_before = cpu()
        threads_before = thread_cpu_seconds(pids[0])
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
            level.cpu_seconds = cpu() - cpu_before
            threads_after = thread_cpu_seconds(pids[0])
            names = thread_names(pids[0])
            for tid, seconds in threads_after.items():
                name = names.get(tid, "MainThread" if tid == pids[0] else f"thread {tid}")
                used = seconds - threads_before.get(tid, 0.0)
                level.thread_cpu[name] = round(level.thread_cpu.get(name, 0.0) + used, 3)
            level.model_calls = model_stats(model_url)["calls"] - calls_before
            if spy is not None:
                spy.send_signal(signal.SIGINT)  # py-spy writes its profile when interrupted
                spy.wait(60)
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
        for daphne in daphnes:
            stack.stop_process(daphne)
    rows_after = usage_rows(stack)
    level.usage_rows = rows_after[0] - rows_before[0]
    level.usage_costed = rows_after[1] - rows_before[1]
    level.spans = model_stats(model_url)["spans"] - spans_before
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
        "side": level.side,
        "model_calls": level.model_calls,
        "cpu_s": round(level.cpu_seconds, 3),
        "cpu_us_per_call": round(1e6 * level.cpu_seconds / max(1, level.model_calls)),
        "rss_idle_mib": round(level.rss_idle / 1024, 1),
        "rss_peak_mib": round(level.rss_peak / 1024, 1),
        "usage_rows": level.usage_rows,
        "usage_costed": level.usage_costed,
        "spans": level.spans,
        "thread_cpu_s": {
            name: s for name, s in sorted(level.thread_cpu.items(), key=lambda i: -i[1]) if s > 0
        },
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

    columns = COLUMNS
    if any(row.get("side") for row in rows):  # an A/B: which side each round was, and its CPU per model call
        columns = [
            COLUMNS[0],
            ("side", "side"),
            *COLUMNS[1:],
            ("calls", "model_calls"),
            ("CPU µs/call", "cpu_us_per_call"),
        ]
    table = [[title for title, _ in columns]] + [[cell(row, key) for _, key in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
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


AB_SIDES: dict[str, tuple[Setup, Setup]] = {
    # Both sides start daphne through the same module; only the environment differs.
    "accounting": (
        Setup(env={"BENCH_ACCOUNTING": "off"}, application=WIRING, side="off"),
        Setup(env={"BENCH_ACCOUNTING": "on"}, application=WIRING, side="on"),
    ),
    "tracing": (Setup(application=WIRING, side="off"), Setup(application=WIRING, side="on")),
}


def ab_setups(args: argparse.Namespace, model_url: str) -> list[Setup]:
    """The rounds of one level: ``--ab-rounds`` pairs of off and on; one plain round without --ab."""
    if not args.ab:
        return [Setup(processes=args.processes)]
    off, on = AB_SIDES[args.ab]
    if args.ab == "tracing":
        # The exporter posts to <endpoint>/v1/traces: the benchmark model's process counts the spans.
        on = Setup(env={"OTEL_EXPORTER_OTLP_ENDPOINT": model_url}, application=WIRING, side="on")
    # Pairs in turn off-on and on-off (off, on, on, off, off, on ...): a drift in the shared machine's load
    # over the run weighs on both sides alike.
    sides = [setup for pair in range(args.ab_rounds) for setup in ((off, on) if pair % 2 == 0 else (on, off))]
    return [Setup(args.processes, setup.env, setup.application, setup.side) for setup in sides]


def ab_problems(ab: str, rows: list[dict[str, Any]]) -> list[str]:
    """Why an A/B's rounds do not compare what they claim to (the "on" side must really meter or trace)."""
    problems = []
    for row in rows:
        label = f"N={row['n']} {ab} {row['side']}"
        if ab == "accounting" and row["side"] == "on" and (row["usage_costed"] < row["model_calls"]):
            problems.append(
                f"{label}: {row['usage_costed']} costed usage rows for {row['model_calls']} calls"
            )
        if ab == "accounting" and row["side"] == "off" and row["usage_rows"]:
            problems.append(f"{label}: {row['usage_rows']} usage rows written")
        if ab == "tracing" and row["side"] == "on" and not row["spans"]:
            problems.append(f"{label}: no spans exported")
        if ab == "tracing" and row["side"] == "off" and row["spans"]:
            problems.append(f"{label}: {row['spans']} spans exported")
    return problems


def spread(values: list[float], digits: int = 1) -> str:
    """``median (min–max)``."""
    if not values:
        return "-"
    return f"{median(values):.{digits}f} ({min(values):.{digits}f}–{max(values):.{digits}f})"


def print_ab(ab: str, rows: list[dict[str, Any]]) -> None:
    """Per level and side: medians and spread of the rounds; then what "on" costs per model call."""
    print(
        f"A/B {ab}: median (min–max) of {len(rows) // max(1, len({r['n'] for r in rows})) // 2} rounds per side"
    )
    header = (
        f"{'N':>5}  {'side':<4}  {'CPU µs/call':<22}  {'CPU ms/run':<22}  {'model→client p50 ms':<22}  "
        f"{'p99 ms':<26}  {'RSS peak MiB':<22}  {'rows':>6}  {'spans':>7}"
    )
    print(header)
    print("-" * len(header))
    for n in sorted({r["n"] for r in rows}):
        medians = {}
        for side in ("off", "on"):
            mine = [r for r in rows if r["n"] == n and r["side"] == side]
            per_call = [float(r["cpu_us_per_call"]) for r in mine]
            medians[side] = median(per_call)
            print(
                f"{n:>5}  {side:<4}  {spread(per_call, 0):<22}  {spread([r['cpu_ms_per_run'] for r in mine]):<22}  "
                f"{spread([r['model_p50'] for r in mine]):<22}  {spread([r['model_p99'] for r in mine]):<26}  "
                f"{spread([r['rss_peak_mib'] for r in mine]):<22}  {sum(r['usage_rows'] for r in mine):>6}  "
                f"{sum(r['spans'] for r in mine):>7}"
            )
        cost = medians["on"] - medians["off"]
        print(
            f"{n:>5}  {ab} on costs {cost:.0f} µs of daphne CPU per model call "
            f"({100 * cost / medians['off']:+.1f} % of the off side's {medians['off']:.0f} µs)"
        )
        # Each pair's two rounds ran back to back: their difference is the least disturbed by the machine.
        level_rows = [r for r in rows if r["n"] == n]
        pairs = [level_rows[i : i + 2] for i in range(0, len(level_rows) - 1, 2)]
        differences = [
            100 * (on["cpu_us_per_call"] - off["cpu_us_per_call"]) / off["cpu_us_per_call"]
            for pair in pairs
            for off, on in [sorted(pair, key=lambda r: r["side"] != "off")]
        ]
        print(f"{n:>5}  paired (on − off) / off, per pair: {', '.join(f'{d:+.1f} %' for d in differences)}")
        print(f"{n:>5}  median of the pairs: {median(differences):+.1f} %")


async def main_async(args: argparse.Namespace) -> None:
    levels = [int(x) for x in args.levels.split(",")]
    model, model_url = start_model(args)
    problems: list[str] = []
    try:
        with BenchStack(extra_env={"AGENT_MAX_CONCURRENT_RUNS_PER_USER": "100000"}) as stack:
            setups = ab_setups(args, model_url)
            # A/B rounds each get conversations of their own (no history carried from an earlier round);
            # the levels of a plain run share theirs, as before.
            per_round = max(levels) + 3
            conversations = per_round * len(setups) if args.ab else per_round
            world = stack.world(
                "benchmarks.world", *world_args(f"{model_url}/v1", f"{model_url}/erp", conversations)
            )
            if args.ab:
                postgres_execute(
                    stack.database_url,
                    "UPDATE agents_modelconfig SET price_input = %s, price_cached_input = %s, "
                    "price_output = %s, price_currency = %s",
                    PRICES,
                )
            rows = []
            for n in levels:
                for index, setup in enumerate(setups):
                    own = world["conversations"][index * per_round : index * per_round + per_round]
                    mine = {"token": world["token"], "conversations": own[:n] + own[-3:]}
                    level = await run_level(stack, mine, n, args, model_url, setup)
                    rows.append(summarise(stack, level))
                    if level.errors:
                        print(f"N={n} {setup.side}: errors {sorted(set(level.errors))}", file=sys.stderr)
                    print(json.dumps(rows[-1]), flush=True)
            if args.ab:
                problems = ab_problems(args.ab, rows)
    finally:
        model.kill()
        model.wait(10)
    print()
    print(f"machine: {machine_summary()}")
    print(
        f"model: {args.latency} s per call, {args.tokens} streamed chunks {args.token_interval * 1000:.0f} ms "
        f"apart; {args.rounds} questions per conversation, {args.think} s apart, starts spread over {args.ramp} s "
        f"(profile {args.profile}); {args.processes} daphne process(es)"
    )
    print()
    print_table(rows)
    print()
    for row in rows:  # where the first daphne process's CPU went, by thread
        used = row["thread_cpu_s"]
        total = sum(used.values()) or 1.0
        shares = ", ".join(
            f"{name} {seconds:.2f} s ({100 * seconds / total:.0f} %)" for name, seconds in used.items()
        )
        print(f"N={row['n']}{' ' + row['side'] if row['side'] else ''} threads of daphne: {shares}")
    if args.ab:
        print()
        print_ab(args.ab, rows)
        for problem in problems:
            print(f"NOT COMPARABLE: {problem}", file=sys.stderr)
    incomplete = load_problems(rows, args.rounds)
    for problem in incomplete:
        print(f"FAILED: {problem}", file=sys.stderr)
    if problems or incomplete:
        raise SystemExit(1)
    print(f"OK: every run of {len(rows)} level(s) ended with done, every cancel cancelled, no error")


def load_problems(rows: list[dict[str, Any]], rounds: int) -> list[str]:
    """What a level failed to do: a question left without its ``done``, a cancel that did not cancel, an
    error frame or a refused handshake. The figures of such a level measure a broken run."""
    problems = []
    for row in rows:
        name = f"N={row['n']}{' ' + row['side'] if row['side'] else ''}"
        if row["runs"] != row["n"] * rounds:
            problems.append(f"{name}: {row['runs']} of {row['n'] * rounds} runs ended with done")
        cancelled, drills = (int(x) for x in row["cancelled"].split("/"))
        if cancelled != drills or drills != CANCELS_PER_LEVEL:
            problems.append(f"{name}: {row['cancelled']} cancels cancelled")
        if row["errors"]:
            problems.append(f"{name}: {row['errors']} error(s)")
    return problems


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
    parser.add_argument(
        "--ab",
        choices=sorted(AB_SIDES),
        help="run each level with usage accounting (or tracing) off and on, interleaved",
    )
    parser.add_argument("--ab-rounds", type=int, default=2, help="rounds per side with --ab")
    parser.add_argument("--processes", type=int, default=1, help="daphne processes sharing the load")
    parser.add_argument(
        "--py-spy", type=Path, help="sample the (first) daphne process with py-spy into this directory"
    )
    parser.add_argument(
        "--py-spy-gil",
        action="store_true",
        help="with --py-spy: sample only the thread holding the GIL, stacks by thread",
    )
    args = parser.parse_args()
    for name, value in PROFILES[args.profile].items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    low, high = (float(x) for x in args.think.split(","))
    args.think_range = (low, high)
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
