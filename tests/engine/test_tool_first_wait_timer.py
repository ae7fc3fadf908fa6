"""A single call's timer is armed at its first wait, for the deadline counted from its start: calls that never
wait need none, and every other call is timed, cancelled and reported exactly as before."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any

import pytest

from agents.engine import events
from agents.engine.parsing import ToolCall
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tool_runner import ToolRunner
from agents.engine.tools import FunctionTool, Tool, ToolCallRecord, ToolRegistry, ToolResult

pytestmark = pytest.mark.timeout(30)

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


async def run_one(fn: Callable[..., Awaitable[Any]], *, tool_timeout: float = 5.0) -> ToolCallRecord:
    return await run_tool(FunctionTool("t", "A tool.", fn, parameters=SCHEMA), tool_timeout=tool_timeout)


async def run_tool(tool: Tool, *, tool_timeout: float = 5.0) -> ToolCallRecord:
    runner = ToolRunner(None, tool_timeout=tool_timeout, batch_timeout=10, max_parallel=4)
    records = await runner.run(
        [ToolCall("c1", tool.name, {"q": "x"})],
        ToolRegistry([tool]),
        iteration=1,
        metadata=RunContext.of(None),
        emit=events.Emitter(None),
    )
    assert isinstance(records, list)
    return records[0]


async def test_a_call_that_never_waits_gives_its_value():
    async def at_once(q: str) -> str:
        return f"at once {q}"

    record = await run_one(at_once)
    assert (record.outcome, record.observation) == ("ok", "at once x")


async def test_a_call_that_waits_many_times_gets_every_value_sent_to_it():
    async def waits(q: str) -> str:
        parts = []
        for i in range(5):
            await asyncio.sleep(0)
            future = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(future.set_result, i)
            parts.append(str(await future))
        return "".join(parts)

    record = await run_one(waits)
    assert (record.outcome, record.observation) == ("ok", "01234")


async def _wait_until_cancelled(q: str, cancelled: list[str]) -> str:
    """Wait for ever; when cancelled, add ``q`` to ``cancelled`` and let the cancellation through."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        cancelled.append(q)
        raise
    return "never"


async def test_a_call_past_its_timeout_is_cancelled_at_its_wait_and_reported_as_timed_out():
    cancelled = []

    async def hangs(q: str) -> str:
        return await _wait_until_cancelled(q, cancelled)

    record = await run_one(hangs, tool_timeout=0.03)
    assert (record.outcome, record.error) == ("timeout", "timed out after 0.03 s")
    assert cancelled == ["x"]


async def test_the_deadline_counts_from_the_calls_start_not_its_first_wait():
    async def busy_then_waits(q: str) -> str:
        time.sleep(0.06)  # noqa: ASYNC251 -- busy longer than the timeout, before the first wait
        await asyncio.sleep(0.01)  # within the timeout counted from here: cut all the same
        return "late"

    record = await run_one(busy_then_waits, tool_timeout=0.03)
    assert record.outcome == "timeout"


async def test_a_timeout_error_of_the_tool_itself_is_an_error_before_or_after_a_wait():
    async def raises_at_once(q: str) -> str:
        raise TimeoutError("upstream")

    async def raises_later(q: str) -> str:
        await asyncio.sleep(0)
        raise TimeoutError("upstream")

    for fn in (raises_at_once, raises_later):
        record = await run_one(fn)
        assert (record.outcome, record.error) == ("error", "the tool failed: TimeoutError: upstream")


class LooksAtItsCall(Tool):
    """Notes the tool call id of its context before and after its first wait."""

    name = "t"
    description = "A tool."
    parameters = SCHEMA

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> str:
        self.seen.append((ctx.tool_call_id, ctx.idempotency_key))
        await asyncio.sleep(0)
        self.seen.append((ctx.tool_call_id, ctx.idempotency_key))
        return "ok"


async def test_a_call_sees_its_own_tool_call_before_and_after_its_first_wait():
    tool = LooksAtItsCall()
    await run_tool(tool)
    assert tool.seen == [("c1", None), ("c1", None)]


async def test_cancelling_the_run_cancels_a_call_waiting_past_its_first_step():
    started = asyncio.Event()
    cancelled = []

    async def waits(q: str) -> str:
        started.set()
        return await _wait_until_cancelled(q, cancelled)

    task = asyncio.create_task(run_one(waits))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled == ["x"]


class _Awaitable:
    def __await__(self) -> Generator[Any, None, str]:
        yield from asyncio.sleep(0).__await__()
        return "from an awaitable"


class AwaitableTool(Tool):
    """A tool whose ``execute`` returns an awaitable that is not a coroutine."""

    name = "t"
    description = "A tool."
    parameters = SCHEMA

    def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> Any:  # type: ignore[override]
        return _Awaitable()


async def test_a_tool_returning_another_awaitable_still_runs_under_its_timer():
    record = await run_tool(AwaitableTool())
    assert (record.outcome, record.observation) == ("ok", "from an awaitable")
    assert isinstance(record.result, ToolResult)
