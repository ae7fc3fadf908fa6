"""Calls of one reply that start together and share their timeout run under one deadline: every outcome (which
call timed out, its observation, error and outcome) is the one a timer per call gives.

Each scenario runs twice, with the shared deadline and with a timer per call, and the records must agree.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.engine import events
from agents.engine.parsing import ToolCall
from agents.engine.run_context import RunContext
from agents.engine.tool_runner import ToolRunner
from agents.engine.tools import FunctionTool, ToolCallRecord, ToolRegistry

pytestmark = pytest.mark.timeout(30)  # a call that outlives every deadline would hang the batch: fail instead


async def quick(q: str) -> str:
    return f"quick {q}"


async def hangs(q: str) -> str:
    await asyncio.Event().wait()
    return "never"


async def swallows_the_cancel(q: str) -> str:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        return "cleaned up and answered"
    return "never"


async def own_timeout(q: str) -> str:
    raise TimeoutError("upstream took too long")


async def timeout_on_cancel(q: str) -> str:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        raise TimeoutError("gave up") from None
    return "never"


async def fails_on_cancel(q: str) -> str:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        raise RuntimeError("broken on cleanup") from None
    return "never"


async def keeps_running(q: str) -> str:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        pass  # ignores the first cancellation (the tool timeout's): only the batch timeout ends it
    await asyncio.Event().wait()
    return "never"


TOOLS = {
    fn.__name__: fn
    for fn in (
        quick,
        hangs,
        swallows_the_cancel,
        own_timeout,
        timeout_on_cancel,
        fails_on_cancel,
        keeps_running,
    )
}


def registry(timeouts: dict[str, float] | None = None) -> ToolRegistry:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    return ToolRegistry(
        FunctionTool(name, name, fn, parameters=schema, timeout=(timeouts or {}).get(name))
        for name, fn in TOOLS.items()
    )


async def run_batch(
    names: list[str], *, own_timers: bool, tool_timeout: float, batch_timeout: float, **timeouts: float
) -> list[ToolCallRecord]:
    runner = ToolRunner(None, tool_timeout=tool_timeout, batch_timeout=batch_timeout, max_parallel=8)
    if own_timers:
        runner._shared_timeout = lambda items: None  # type: ignore[method-assign]
    calls = [ToolCall(f"c{i}", name, {"q": str(i)}) for i, name in enumerate(names)]
    records = await runner.run(
        calls, registry(timeouts), iteration=1, metadata=RunContext.of(None), emit=events.Emitter(None)
    )
    assert isinstance(records, list)
    return records


def outcomes(records: list[ToolCallRecord]) -> list[tuple[Any, ...]]:
    return [(r.name, r.outcome, r.error, r.observation) for r in records]


SCENARIOS = [
    ["quick", "hangs"],
    ["hangs", "hangs", "quick"],
    ["quick", "swallows_the_cancel"],
    ["own_timeout", "hangs"],
    ["timeout_on_cancel", "quick"],
    ["fails_on_cancel", "hangs"],
    ["keeps_running", "quick"],
]


@pytest.mark.parametrize("names", SCENARIOS, ids=["-".join(s) for s in SCENARIOS])
@pytest.mark.parametrize(("tool_timeout", "batch_timeout"), [(0.03, 0.2), (0.3, 0.05)])
async def test_one_deadline_for_the_batch_gives_each_call_the_outcome_of_its_own_timer(
    names, tool_timeout, batch_timeout
):
    shared = await run_batch(names, own_timers=False, tool_timeout=tool_timeout, batch_timeout=batch_timeout)
    own = await run_batch(names, own_timers=True, tool_timeout=tool_timeout, batch_timeout=batch_timeout)
    assert outcomes(shared) == outcomes(own)
    assert all(r.outcome == "ok" for r in shared if r.name == "quick")
    assert all(r.outcome == "timeout" for r in shared if r.name in ("hangs", "keeps_running"))


async def test_calls_with_their_own_timeouts_keep_a_timer_each():
    records = await run_batch(
        ["hangs", "swallows_the_cancel"],
        own_timers=False,
        tool_timeout=0.03,
        batch_timeout=0.2,
        swallows_the_cancel=0.06,
    )
    assert [(r.outcome, r.error) for r in records] == [
        ("timeout", "timed out after 0.03 s"),
        ("ok", None),
    ]


async def test_cancelling_the_run_during_a_shared_deadline_cancels_every_call():
    started = asyncio.Event()

    async def waits(q: str) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = ToolRegistry([FunctionTool("waits", "w", waits, parameters=schema)])
    runner = ToolRunner(None, tool_timeout=5, batch_timeout=10, max_parallel=4)
    calls = [ToolCall(f"c{i}", "waits", {"q": "x"}) for i in range(2)]
    task = asyncio.create_task(
        runner.run(calls, tools, iteration=1, metadata=RunContext.of(None), emit=events.Emitter(None))
    )
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
