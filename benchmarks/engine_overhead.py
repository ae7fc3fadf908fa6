"""Engine overhead per model turn, outside the LLM call.

A scripted model calls one tool per turn N times (N = 1, 10, 50), then answers. Every ``chat()`` call is
timed; what remains of the run's wall time is the engine's own work (building the turn, parsing, schema
validation, hooks, tool dispatch, events, guidance), divided by the number of turns. "first/last 10" are
the medians of the gaps between consecutive model calls early and late in the run: equal values mean
the cost per turn stays flat as the history grows.

Two transports: the in-process LLM double (``tests/engine/doubles.py``), and the scripted
OpenAI-compatible HTTP server at zero latency through the real ``openai`` SDK (the SDK's own time is
inside ``chat()`` and therefore excluded). The in-process double runs twice: plain, and as a durable run
whose ``checkpoint`` callback takes every checkpoint (queued, as the platform's event writer does).

With ``--tracing`` the in-process double also runs with OpenTelemetry tracing on (the run, model-call, tool-call
and hook-verdict spans of :mod:`agents.engine.tracing`, kept by an in-memory exporter), next to the same runs
with tracing off (the production default: nothing wrapped), A/B in one process.

With ``--accounting`` the in-process double runs without and with the platform's accounting: every call
through :class:`~agents.engine.metering.MeteredLLM` and the runtime's :class:`~agents.usage.meter.RunMeter`
(prices set, so each call's cost is computed and its ``UsageRecord`` row built and queued, as the event
writer's batch takes them), A/B in one process. No budgets: they add a counter round trip per call.

With ``--growth`` the run's length grows, K = 1, 10, 50, 100, 200, 400 tool calls, with the garbage
collector on (as production runs), through the in-process double plain and with the platform's wiring:
what :mod:`agents.runtime` and :mod:`agents.runs.manager` wire into every run, reproduced without Django
(an event sink that numbers and queues every event, a writer task that takes them and builds their
frames; the ``checkpoint``
callback, waiting until a checkpoint with pending calls is written; a ``ContextGuard``, the follow-up
queue, the plan-step marker hook, a tool call ledger, the run's context and a system prompt). No usage
accounting (``--accounting`` measures it; it needs Django). Besides wall time it reports the thread's CPU
time per turn, less noisy on a shared machine. "platform + JSON writer" also encodes every queued event
and checkpoint as JSON in the writer task (the platform does that in its database thread, off the
run's path but on the process's CPU). ``--json`` prints the rows as JSON instead of a table
(for A/B rounds across checkouts).

    .venv/bin/python benchmarks/engine_overhead.py [--tracing | --accounting | --growth] [--json] [--smoke]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import platform
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.engine import tracing  # noqa: E402
from agents.engine.context import ContextGuard  # noqa: E402
from agents.engine.durable.checkpoint import Checkpoint  # noqa: E402
from agents.engine.durable.ledger import RecordedCall  # noqa: E402
from agents.engine.events import Event  # noqa: E402
from agents.engine.follow_ups import FollowUpQueue  # noqa: E402
from agents.engine.hooks import ALLOW, HookContext, HookRegistry, PreToolUseHook, PreVerdict  # noqa: E402
from agents.engine.llm import ChatResponse, Message, OpenAICompatibleLLM  # noqa: E402
from agents.engine.react import ReActAgent  # noqa: E402
from agents.engine.run_context import RunContext  # noqa: E402
from agents.engine.tools import FunctionTool, ToolRegistry  # noqa: E402
from tests.engine.doubles import FakeLLM, say, use  # noqa: E402
from tests.fakes.openai_server import ScriptedOpenAIServer, call, text, tool_calls  # noqa: E402

TOOL_CALLS = (1, 10, 50)
RUNS_IN_PROCESS = {1: 2000, 10: 300, 50: 80}
RUNS_HTTP = {1: 60, 10: 15, 50: 8}
GROWTH_CALLS = (1, 10, 50, 100, 200, 400)
RUNS_GROWTH = {1: 400, 10: 100, 50: 30, 100: 16, 200: 8, 400: 5}


async def search(q: str) -> str:
    return f"3 results for {q}"


def registry() -> ToolRegistry:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return ToolRegistry([FunctionTool("search", "Search the knowledge base.", search, parameters=schema)])


class TimedLLM:
    """Wraps an LLM and records when each ``chat()`` call starts and ends."""

    def __init__(self, llm: Any) -> None:
        self.llm = llm
        self.abilities = llm.abilities
        self.context_window = llm.context_window
        self.marks: list[tuple[float, float]] = []
        self.cpu_inside = 0.0

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        started = time.perf_counter()
        cpu = time.thread_time()
        try:
            return await self.llm.chat(messages, **kwargs)
        finally:
            self.cpu_inside += time.thread_time() - cpu
            self.marks.append((started, time.perf_counter()))

    def stream_chat(self, messages: Sequence[Message], **kwargs: Any) -> Any:
        return self.llm.stream_chat(messages, **kwargs)


class Script:
    """The in-process model: N prebuilt tool-call replies, then the answer (for as long as asked)."""

    def __init__(self, tool_calls_count: int) -> None:
        self.replies = [use(("search", {"q": f"query {i}"})) for i in range(tool_calls_count)]
        self.answer = say("Here is the answer.")
        self.index = 0

    def __call__(self, messages: Sequence[Message]) -> ChatResponse:
        index = self.index
        self.index += 1
        return self.replies[index] if index < len(self.replies) else self.answer


async def on_event(event: Event) -> None:
    """A consumer that takes every event (so events are built, as in production)."""


class CheckpointQueue:
    """A ``checkpoint`` callback that queues each checkpoint for a writer, as the platform's sink does."""

    def __init__(self) -> None:
        self.queue: list[Checkpoint] = []

    async def __call__(self, checkpoint: Checkpoint) -> None:
        self.queue.append(checkpoint)


def traced_parts(llm: Any) -> tuple[Any, ToolRegistry, Any]:
    """The run's LLM, tools and hooks as the runtime wraps them when tracing is on."""
    attributes = {"org": "bench", "agent": "bench-agent", "run": "bench-run"}
    tools = ToolRegistry([tracing.TracedTool(tool, attributes) for tool in registry()])
    return tracing.TracedLLM(llm, attributes), tools, tracing.TracedHookRegistry(attributes)


ACCOUNTING: dict[str, Any] = {"on": False}


class RowQueue:
    """The run's usage sink as the event writer's: rows queued for the next batch."""

    def __init__(self) -> None:
        self.rows: list[Any] = []

    def usage(self, row: Any) -> None:
        self.rows.append(row)

    def write_later(self, write: Any) -> None:
        pass  # no budgets here: no budget warning to write


def metered(llm: Any) -> Any:
    """``llm`` as the runtime wraps it for a run with accounting (and no budgets)."""
    import uuid
    from decimal import Decimal

    from agents.engine.metering import MeteredLLM
    from agents.usage.meter import EndpointAccount, RunMeter, UsageOwner
    from agents.usage.pricing import Prices

    prices = Prices(
        input=Decimal("2.00"), output=Decimal("8.00"), currency="USD", cached_input=Decimal("0.50")
    )
    meter = RunMeter(
        owner=UsageOwner(organization_id=1, user_id=1, agent_id=uuid.uuid4(), run_id=uuid.uuid4()),
        endpoints={"bench": EndpointAccount(uuid.uuid4(), prices)},
        budgets=(),
        counter=None,
        sink=RowQueue(),
    )
    return MeteredLLM(llm, meter, endpoint_id="bench")


class Writer:
    """The platform's event writer without a database: a task that takes what the run's sinks queued,
    encodes each event and checkpoint as JSON (as the database adapter does), builds the events' frames
    and resolves the checkpoints waited for."""

    def __init__(self, *, encode: bool) -> None:
        self.encode = encode
        self.pending: list[tuple[str, int, dict[str, Any], asyncio.Future[None] | None]] = []
        self.task: asyncio.Task[None] | None = None
        self.written = 0

    def put(
        self, kind: str, seq: int, data: dict[str, Any], committed: asyncio.Future[None] | None = None
    ) -> None:
        self.pending.append((kind, seq, data, committed))
        if self.task is None:
            self.task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        try:
            while self.pending:
                await asyncio.sleep(
                    0
                )  # the platform writes in the database thread: the run goes on meanwhile
                batch, self.pending = self.pending, []
                frames = []
                for kind, seq, data, committed in batch:
                    if self.encode:
                        self.written += len(json.dumps(data))
                    if kind == "event":
                        frames.append({"seq": seq, "data": data})
                    elif committed is not None and not committed.done():
                        committed.set_result(None)
        finally:
            self.task = None


class Sink:
    """The run's event sink (``agents.runs.events.store.EventSink``) without Django: events numbered and
    queued (never awaited); checkpoints queued behind them, one with pending calls waited for."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.next_seq = 1

    async def __call__(self, event: Event) -> None:
        self.emit(event.channel, event.data)

    def emit(self, channel: str, data: Mapping[str, Any]) -> int:
        seq = self.next_seq
        self.next_seq += 1
        self.writer.put("event", seq, {"event": channel, "data": dict(data)})
        return seq

    async def checkpoint(self, checkpoint: Checkpoint) -> None:
        pending = bool(checkpoint.state.get("pending"))
        committed = asyncio.get_running_loop().create_future() if pending else None
        self.writer.put("checkpoint", checkpoint.seq, checkpoint.as_dict(), committed)
        if committed is not None:
            await committed


class PassingHook(PreToolUseHook):
    """A pre-tool hook that judges nothing (the guard rails' path for a call that is not a connector's):
    the hook machinery's cost without the database."""

    name = "passing_hook"
    priority = -1000

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        return ALLOW


class Ledger:
    """The tool call ledger in memory (the platform's writes a row before each call, joins the finish
    to the next batch)."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.rows: dict[str, dict[str, Any]] = {}

    async def recorded(self, keys: Sequence[str], *, iteration: int) -> Mapping[str, RecordedCall]:
        return {}

    async def begin(self, key: str, *, tool_name: str, args: Mapping[str, Any], iteration: int) -> None:
        self.rows[key] = {"tool": tool_name, "iteration": iteration, "finished": False}

    async def finish(self, key: str, *, observation: str, error: str | None, outcome: str) -> None:
        self.rows[key].update(finished=True, observation=observation, error=error, outcome=outcome)


INSTRUCTIONS = "You are the support agent of Example Ltd. Answer from the knowledge base; cite what you use."
CONTEXT = RunContext(
    org_id=1,
    org_slug="bench",
    user_id=1,
    username="bench",
    agent_id="00000000-0000-0000-0000-000000000001",
    agent_name="bench agent",
    conversation_id="00000000-0000-0000-0000-000000000002",
    run_id="00000000-0000-0000-0000-000000000003",
    approval_hold_seconds=30.0,
)


def platform_run(llm: Any, max_iterations: int, *, encode: bool) -> tuple[ReActAgent, dict[str, Any]]:
    """The agent and ``run()`` arguments as ``runtime.engine_for`` and the run manager build them
    (``encode``: the writer encodes what it takes as JSON)."""
    writer = Writer(encode=encode)
    sink = Sink(writer)
    agent = ReActAgent(
        llm,
        registry(),
        system_prompt=INSTRUCTIONS,
        hooks=HookRegistry([PassingHook()]),
        max_iterations=max_iterations,
        completion_check=True,
        context_guard=ContextGuard(llm, context_window=llm.context_window),
        follow_ups=FollowUpQueue(),
        ledger=Ledger(writer),
    )
    return agent, {"on_event": sink, "metadata": CONTEXT, "checkpoint": sink.checkpoint}


async def measure(
    llm: TimedLLM,
    runs: int,
    reset: Any,
    *,
    checkpoints: bool = False,
    platform: bool = False,
    encode: bool = False,
    max_iterations: int = 100,
) -> dict[str, float]:
    per_turn: list[float] = []
    cpu_per_turn: list[float] = []
    llm_calls: list[float] = []
    early: list[float] = []
    late: list[float] = []
    turns = 0
    for _ in range(runs):
        reset()
        llm.marks.clear()
        llm.cpu_inside = 0.0
        options: dict[str, Any] = {"on_event": on_event}
        if platform:
            agent, options = platform_run(llm, max_iterations, encode=encode)
        elif tracing.enabled():
            model, tools, hooks = traced_parts(llm)
            agent = ReActAgent(model, tools, hooks=hooks, max_iterations=max_iterations)
        elif ACCOUNTING["on"]:
            agent = ReActAgent(metered(llm), registry(), max_iterations=max_iterations)
        else:
            agent = ReActAgent(llm, registry(), max_iterations=max_iterations)
        if checkpoints:
            options["checkpoint"] = CheckpointQueue()
        started = time.perf_counter()
        cpu = time.thread_time()
        with tracing.run_span({"run": "bench-run"}):
            result = await agent.run("Find what we know about the query.", **options)
            writer = getattr(options["on_event"], "writer", None)
            while writer is not None and writer.task is not None:  # what the run queued is written
                await writer.task
        cpu = time.thread_time() - cpu
        elapsed = time.perf_counter() - started
        inside = sum(end - start for start, end in llm.marks)
        turns = result.iterations
        per_turn.append((elapsed - inside) / turns)
        cpu_per_turn.append((cpu - llm.cpu_inside) / turns)
        llm_calls.append(inside / len(llm.marks))
        gaps = [llm.marks[i + 1][0] - llm.marks[i][1] for i in range(len(llm.marks) - 1)]
        if len(gaps) >= 20:
            early.append(statistics.median(gaps[:10]))
            late.append(statistics.median(gaps[-10:]))
    return {
        "turns": turns,
        "median": statistics.median(per_turn) * 1e6,
        "cpu": statistics.median(cpu_per_turn) * 1e6,
        "spread": (max(per_turn) - min(per_turn)) * 1e6,
        "early": statistics.median(early) * 1e6 if early else float("nan"),
        "late": statistics.median(late) * 1e6 if late else float("nan"),
        "llm": statistics.median(llm_calls) * 1e6,
    }


async def bench_in_process(
    *, checkpoints: bool = False, label: str | None = None
) -> list[tuple[str, int, Mapping[str, float]]]:
    rows = []
    label = label or ("in-process + checkpoint" if checkpoints else "in-process double")
    for count in TOOL_CALLS:
        runs = RUNS_IN_PROCESS[count]
        rows.append((label, count, await _scripted(count, runs, max(5, runs // 10), checkpoints=checkpoints)))
    return rows


async def _scripted(count: int, runs: int, warm_up: int, **options: Any) -> dict[str, float]:
    """:func:`measure` of ``runs`` runs of a script of ``count`` tool calls, after ``warm_up`` runs of it."""
    script = Script(count)
    llm = TimedLLM(FakeLLM(responder=script, record=False))

    def reset() -> None:
        script.index = 0

    await measure(llm, warm_up, reset, **options)
    return await measure(llm, runs, reset, **options)


GROWTH_TRANSPORTS = {
    "in-process double": {},
    "platform wiring": {"platform": True},
    "platform + JSON writer": {"platform": True, "encode": True},
}


async def bench_growth(transports: Sequence[str]) -> list[tuple[str, int, Mapping[str, float]]]:
    """The in-process double plain and with the platform's wiring, K = 1 ... 400 tool calls, GC on."""
    rows = []
    for label in transports:
        for count in GROWTH_CALLS:
            runs = RUNS_GROWTH[count]
            options = {**GROWTH_TRANSPORTS[label], "max_iterations": count + 10}
            rows.append((label, count, await _scripted(count, runs, max(2, runs // 5), **options)))
    return rows


async def bench_http(server: ScriptedOpenAIServer) -> list[tuple[str, int, Mapping[str, float]]]:
    rows = []
    openai_llm = OpenAICompatibleLLM(
        base_url=server.base_url, api_key="sk-bench", model="bench", max_retries=0
    )
    llm = TimedLLM(openai_llm)
    for count in TOOL_CALLS:

        def reset(count: int = count) -> None:
            server.reset()
            server.script(*(tool_calls(call("search", {"q": f"query {i}"})) for i in range(count)))
            server.script(*(text("Here is the answer.") for _ in range(2)))

        await measure(llm, 1, reset)  # warm-up (connection pool)
        rows.append(("scripted HTTP server", count, await measure(llm, RUNS_HTTP[count], reset)))
    await openai_llm.client().close()
    return rows


def machine() -> str:
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPU(s), {model}, Python {platform.python_version()}"


def bench_tracing() -> list[tuple[str, int, Mapping[str, float]]]:
    """The in-process double with tracing off, then on (every span kept by an in-memory exporter)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    rows = asyncio.run(bench_in_process(label="tracing off"))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    try:
        rows += asyncio.run(bench_in_process(label="tracing on (in memory)"))
    finally:
        tracing.disable()
        spans = len(exporter.get_finished_spans())
        provider.shutdown()
    print(f"tracing on: {spans} spans kept by the in-memory exporter", file=sys.stderr)
    return rows


def bench_accounting() -> list[tuple[str, int, Mapping[str, float]]]:
    """The in-process double without, then with the platform's accounting (interleaved twice)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")
    import django

    django.setup()  # the meter's rows and prices live in the agents app (no database is used)
    logging.disable(logging.INFO)  # as in the other modes (no log configuration): the engine's work alone
    rows: list[tuple[str, int, Mapping[str, float]]] = []
    for _ in range(2):
        ACCOUNTING["on"] = False
        rows += asyncio.run(bench_in_process(label="accounting off"))
        ACCOUNTING["on"] = True
        rows += asyncio.run(bench_in_process(label="accounting on"))
    ACCOUNTING["on"] = False
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tracing", action="store_true", help="also measure with OpenTelemetry tracing on")
    parser.add_argument("--accounting", action="store_true", help="measure without and with usage accounting")
    parser.add_argument(
        "--growth", action="store_true", help="K = 1 ... 400 tool calls, plain and platform-wired"
    )
    parser.add_argument(
        "--transport",
        action="append",
        choices=sorted(GROWTH_TRANSPORTS),
        help="with --growth: only these transports (repeatable; default all)",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument(
        "--smoke", action="store_true", help="tiny sizes (K = 1 and 3, 2 runs): it runs; figures mean nothing"
    )
    options = parser.parse_args()
    if options.smoke:
        shrink()
    show = print_json if options.json else print_rows
    gc.collect()
    if options.growth:
        logging.disable(logging.INFO)  # no log configuration in production's hot path either
        show(asyncio.run(bench_growth(options.transport or list(GROWTH_TRANSPORTS))))
        return
    if options.accounting:
        show(bench_accounting())
        return
    if options.tracing:
        show(bench_tracing())
        return
    rows = asyncio.run(bench_in_process())
    rows += asyncio.run(bench_in_process(checkpoints=True))
    with ScriptedOpenAIServer() as server:
        rows += asyncio.run(bench_http(server))
    show(rows)


def shrink() -> None:
    """``--smoke``: every mode at K = 1 and 3 tool calls, 2 runs each (``make bench-smoke``)."""
    global TOOL_CALLS, GROWTH_CALLS
    TOOL_CALLS = GROWTH_CALLS = (1, 3)
    for runs in (RUNS_IN_PROCESS, RUNS_HTTP, RUNS_GROWTH):
        runs.clear()
        runs.update(dict.fromkeys(TOOL_CALLS, 2))


def print_json(rows: list[tuple[str, int, Mapping[str, float]]]) -> None:
    print(json.dumps([{"transport": t, "tool_calls": k, **row} for t, k, row in rows]))


def print_rows(rows: list[tuple[str, int, Mapping[str, float]]]) -> None:
    print(f"engine overhead per turn, outside the LLM call ({machine()})")
    header = (
        f"{'transport':<24}{'tool calls':>11}{'turns':>7}{'µs/turn':>10}{'first 10':>10}{'last 10':>10}"
        f"{'µs in chat()':>14}{'CPU µs/turn':>13}"
    )
    print(header)
    print("-" * len(header))

    def cell(value: float, width: int) -> str:
        return f"{'-':>{width}}" if value != value else f"{value:>{width}.1f}"  # NaN: run too short

    for transport, count, row in rows:
        print(
            f"{transport:<24}{count:>11}{row['turns']:>7}{row['median']:>10.1f}{cell(row['early'], 10)}"
            f"{cell(row['late'], 10)}{row['llm']:>14.1f}{row['cpu']:>13.1f}"
        )


if __name__ == "__main__":
    main()
