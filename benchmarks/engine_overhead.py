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

    .venv/bin/python benchmarks/engine_overhead.py [--tracing | --accounting]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
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
from agents.engine.checkpoint import Checkpoint  # noqa: E402
from agents.engine.events import Event  # noqa: E402
from agents.engine.llm import ChatResponse, Message, OpenAICompatibleLLM  # noqa: E402
from agents.engine.react import ReActAgent  # noqa: E402
from agents.engine.tools import FunctionTool, ToolRegistry  # noqa: E402
from tests.engine.doubles import FakeLLM, say, use  # noqa: E402
from tests.fakes.openai_server import ScriptedOpenAIServer, call, text, tool_calls  # noqa: E402

TOOL_CALLS = (1, 10, 50)
RUNS_IN_PROCESS = {1: 2000, 10: 300, 50: 80}
RUNS_HTTP = {1: 60, 10: 15, 50: 8}


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

    async def chat(self, messages: Sequence[Message], **kwargs: Any) -> ChatResponse:
        started = time.perf_counter()
        try:
            return await self.llm.chat(messages, **kwargs)
        finally:
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
        pass


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


async def measure(llm: TimedLLM, runs: int, reset: Any, *, checkpoints: bool = False) -> dict[str, float]:
    per_turn: list[float] = []
    llm_calls: list[float] = []
    early: list[float] = []
    late: list[float] = []
    turns = 0
    for _ in range(runs):
        reset()
        llm.marks.clear()
        if tracing.enabled():
            model, tools, hooks = traced_parts(llm)
            agent = ReActAgent(model, tools, hooks=hooks, max_iterations=100)
        elif ACCOUNTING["on"]:
            agent = ReActAgent(metered(llm), registry(), max_iterations=100)
        else:
            agent = ReActAgent(llm, registry(), max_iterations=100)
        checkpoint = CheckpointQueue() if checkpoints else None
        started = time.perf_counter()
        with tracing.run_span({"run": "bench-run"}):
            result = await agent.run(
                "Find what we know about the query.", on_event=on_event, checkpoint=checkpoint
            )
        elapsed = time.perf_counter() - started
        inside = sum(end - start for start, end in llm.marks)
        turns = result.iterations
        per_turn.append((elapsed - inside) / turns)
        llm_calls.append(inside / len(llm.marks))
        gaps = [llm.marks[i + 1][0] - llm.marks[i][1] for i in range(len(llm.marks) - 1)]
        if len(gaps) >= 20:
            early.append(statistics.median(gaps[:10]))
            late.append(statistics.median(gaps[-10:]))
    return {
        "turns": turns,
        "median": statistics.median(per_turn) * 1e6,
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
        script = Script(count)
        llm = TimedLLM(FakeLLM(responder=script, record=False))

        def reset(script: Script = script) -> None:
            script.index = 0

        runs = RUNS_IN_PROCESS[count]
        await measure(llm, max(5, runs // 10), reset, checkpoints=checkpoints)  # warm-up
        rows.append((label, count, await measure(llm, runs, reset, checkpoints=checkpoints)))
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
    options = parser.parse_args()
    gc.collect()
    if options.accounting:
        print_rows(bench_accounting())
        return
    if options.tracing:
        rows = bench_tracing()
        print_rows(rows)
        return
    rows = asyncio.run(bench_in_process())
    rows += asyncio.run(bench_in_process(checkpoints=True))
    with ScriptedOpenAIServer() as server:
        rows += asyncio.run(bench_http(server))
    print_rows(rows)


def print_rows(rows: list[tuple[str, int, Mapping[str, float]]]) -> None:
    print(f"engine overhead per turn, outside the LLM call ({machine()})")
    header = (
        f"{'transport':<24}{'tool calls':>11}{'turns':>7}{'µs/turn':>10}{'first 10':>10}{'last 10':>10}"
        f"{'µs in chat()':>14}"
    )
    print(header)
    print("-" * len(header))

    def cell(value: float, width: int) -> str:
        return f"{'-':>{width}}" if value != value else f"{value:>{width}.1f}"  # NaN: run too short

    for transport, count, row in rows:
        print(
            f"{transport:<24}{count:>11}{row['turns']:>7}{row['median']:>10.1f}{cell(row['early'], 10)}"
            f"{cell(row['late'], 10)}{row['llm']:>14.1f}"
        )


if __name__ == "__main__":
    main()
