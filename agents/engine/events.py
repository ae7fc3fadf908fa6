"""The events a run reports, exactly the channels and payloads of the spec's SSE table.

An :class:`Event` is built once and handed to ONE async callback (``on_event``) given to
``ReActAgent.run()`` / ``stream_answer()``. :class:`EventStream` and :func:`iterate_events` adapt that
callback to an async iterator. Payload keys come in the spec's order; a few extra keys (``tool_call_id``
so clients can match parallel calls, ``cancelled``/``stop_reason`` on ``done``) follow the spec's keys.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.engine.stop_reasons import StopReason

logger = logging.getLogger(__name__)

STEP = "step"
ANSWER = "answer"
COMPACT = "compact"
PHASE = "phase"
FOLLOW_UP_TAKEN = "inject"  # the wire name of the event (the websocket, the stored events)
DONE = "done"
PLAN = "plan"


@dataclass(frozen=True, slots=True)
class Event:
    """One event: a channel (``step``, ``answer``, ``compact``, ``phase``, ``inject``, ``done``) and its payload."""

    channel: str
    data: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """``{"event": channel, "data": payload}``: the websocket frame body without ``seq``/``run_id``."""
        return {"event": self.channel, "data": dict(self.data)}


EventCallback = Callable[[Event], Awaitable[None]]


def thinking_start(iteration: int) -> Event:
    """``step`` thinking start: before every LLM call of the tool loop."""
    return Event(STEP, {"type": "thinking", "status": "start", "iteration": iteration})


def thinking_done(iteration: int, reasoning: str, *, error: str | None = None) -> Event:
    """``step`` thinking done: after the LLM replied, before any tool runs. ``error`` (an extra key, only
    when set) says the model call failed or was stopped and no reply came."""
    data: dict[str, Any] = {
        "type": "thinking",
        "status": "done",
        "iteration": iteration,
        "reasoning": reasoning,
    }
    if error is not None:
        data["error"] = error
    return Event(STEP, data)


def iteration_start(iteration: int, tool_name: str, tool_args: Any, tool_call_id: str) -> Event:
    """``step`` iteration start: a tool call begins (before its hooks, so a UI can show a pending approval)."""
    return Event(
        STEP,
        {
            "type": "iteration",
            "status": "start",
            "iteration": iteration,
            "tool_name": tool_name,
            "tool_args": tool_args,
            "tool_call_id": tool_call_id,
        },
    )


def iteration_done(
    iteration: int,
    tool_name: str,
    observation: str,
    error: str | None,
    iter_elapsed: float,
    tool_call_id: str,
    *,
    outcome: str,
    tool_args: Any,
    artifacts: list[dict[str, Any]] | None = None,
    citations: list[dict[str, Any]] | None = None,
) -> Event:
    """``step`` iteration done: the call finished; ``error`` is the error message or ``None``;
    ``citations`` the sources the result quotes, numbered as the answer cites them."""
    data: dict[str, Any] = {
        "type": "iteration",
        "status": "done",
        "iteration": iteration,
        "tool_name": tool_name,
        "observation": observation,
        "error": error,
        "iter_elapsed": iter_elapsed,
        "tool_call_id": tool_call_id,
        "outcome": outcome,
        "tool_args": tool_args,
    }
    if artifacts:
        data["artifacts"] = artifacts
    if citations:
        data["citations"] = citations
    return Event(STEP, data)


def answer_signal() -> Event:
    """``step`` answer start: the agent has signalled its final answer."""
    return Event(STEP, {"type": "answer", "status": "start"})


def answer_start() -> Event:
    """``answer`` start: the synthesis stream begins."""
    return Event(ANSWER, {"status": "start"})


def answer_delta(content: str) -> Event:
    """``answer`` delta: one streamed piece of the answer."""
    return Event(ANSWER, {"status": "delta", "content": content})


def answer_done(content: str, *, fallback: bool) -> Event:
    """``answer`` done. ``content`` is the whole answer; ``fallback`` says the stream failed and ``content``
    (the tool loop's own answer) replaces whatever deltas were shown."""
    return Event(ANSWER, {"status": "done", "content": content, "fallback": fallback})


def compact(original_messages: int, kept_messages: int) -> Event:
    """``compact``: the context was compacted before an LLM call."""
    return Event(COMPACT, {"original_messages": original_messages, "kept_messages": kept_messages})


def selecting_tools(total_tools: int) -> Event:
    """``phase``: the tool selection phase is active."""
    return Event(PHASE, {"phase": "selecting_tools", "total_tools": total_tools})


def follow_up_taken(content: str) -> Event:
    """``inject`` (its wire name): one follow-up was taken into the run."""
    return Event(FOLLOW_UP_TAKEN, {"type": "inject", "content": content})


def done(
    answer: str,
    iterations: int,
    usage: Mapping[str, int],
    elapsed: float,
    *,
    cancelled: bool = False,
    stop_reason: StopReason | str = "",
) -> Event:
    """``done``: the final result payload (``stop_reason`` a :class:`StopReason`, or empty)."""
    return Event(
        DONE,
        {
            "answer": answer,
            "iterations": iterations,
            "usage": dict(usage),
            "elapsed": elapsed,
            "cancelled": cancelled,
            "stop_reason": str(stop_reason),  # the enum's value: the payload stays plain JSON
        },
    )


def cancelled_done(iterations: int, usage: Mapping[str, int], elapsed: float) -> Event:
    """``done`` of a cancelled run: no answer, ``cancelled`` and its stop reason."""
    return done("", iterations, usage, elapsed, cancelled=True, stop_reason=StopReason.CANCELLED)


# --- plan mode -------------------------------------------------------------------------------


def plan_dag(round_: int, steps: list[dict[str, Any]]) -> Event:
    """``plan`` dag: a plan was made; ``steps`` are ``{id, task, dependencies, tool_hint, model_hint, status}``."""
    return Event(PLAN, {"type": "dag", "round": round_, "steps": steps})


def plan_step(
    round_: int,
    step_id: str,
    status: str,
    *,
    result: str | None = None,
    error: str | None = None,
    elapsed: float | None = None,
) -> Event:
    """``plan`` step: one step changed status; ``result``/``error``/``elapsed`` only when known."""
    data: dict[str, Any] = {"type": "step", "round": round_, "step_id": step_id, "status": status}
    if result is not None:
        data["result"] = result
    if error is not None:
        data["error"] = error
    if elapsed is not None:
        data["elapsed"] = elapsed
    return Event(PLAN, data)


def plan_step_iteration(round_: int, step_id: str, payload: Mapping[str, Any]) -> Event:
    """``plan`` step_iteration: a step agent's ``step`` iteration event (start/done of a tool call), its
    own ``type`` replaced."""
    data: dict[str, Any] = {"type": "step_iteration", "round": round_, "step_id": step_id}
    data.update((k, v) for k, v in payload.items() if k != "type")
    return Event(PLAN, data)


def plan_phase(phase: str, round_: int, *, reasoning: str | None = None) -> Event:
    """``phase`` of plan mode: ``planning``, ``executing``, ``analyzing`` or ``replanning`` (with the
    analyser's ``reasoning``)."""
    data: dict[str, Any] = {"phase": phase, "round": round_}
    if reasoning is not None:
        data["reasoning"] = reasoning
    return Event(PHASE, data)


#: The ``error`` of a step closed because its run was stopped; such an iteration's ``outcome`` is
#: ``cancelled`` (the call did not finish), not ``error``.
CLOSED_CANCELLED = "cancelled"


def closing_event(start: Event, error: str) -> Event:
    """The done event that closes an open ``step`` start (thinking or iteration) that failed with ``error``."""
    data = start.data
    if data["type"] == "thinking":
        return thinking_done(data["iteration"], "", error=error)
    return iteration_done(
        data["iteration"],
        data["tool_name"],
        "",
        error,
        0.0,
        data["tool_call_id"],
        outcome="cancelled" if error == CLOSED_CANCELLED else "error",
        tool_args=data["tool_args"],
    )


_TRACKED_STEPS = frozenset({"thinking", "iteration"})


class Emitter:
    """Delivers events to an optional callback; a failing callback is logged and never breaks the run.

    It remembers the ``step`` starts (thinking, iteration) not yet done, so that :meth:`close_open` can
    close them before the run's ``done``: every step the stream opened is closed, whatever failed.
    """

    __slots__ = ("callback", "_open")

    def __init__(self, callback: EventCallback | None) -> None:
        self.callback = callback
        self._open: dict[tuple[str, Any], Event] = {}

    @property
    def active(self) -> bool:
        return self.callback is not None

    async def __call__(self, event: Event) -> None:
        if self.callback is None:
            return
        if event.channel == STEP:
            data = event.data
            kind = data.get("type")
            if kind in _TRACKED_STEPS:  # (inline: every step event of every turn passes here)
                key = (kind, data["tool_call_id"] if kind == "iteration" else data["iteration"])
                if data.get("status") == "start":
                    self._open[key] = event
                else:
                    self._open.pop(key, None)
        try:
            await self.callback(event)
        except Exception as exc:
            logger.warning("event callback failed on %s event: %s", event.channel, type(exc).__name__)

    async def close_open(self, error: str) -> None:
        """Emit a done event, with ``error``, for every step started and not done, in the order they began."""
        while self._open:
            start = next(iter(self._open.values()))
            await self(closing_event(start, error))


_CLOSED = object()


class EventStream:
    """An ``on_event`` callback that feeds an async iterator: pass the stream as ``on_event``, iterate it,
    and call :meth:`close` when the producer is finished."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Any] = asyncio.Queue()

    async def __call__(self, event: Event) -> None:
        self._queue.put_nowait(event)

    def close(self) -> None:
        self._queue.put_nowait(_CLOSED)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        item = await self._queue.get()
        if item is _CLOSED:
            self._queue.put_nowait(_CLOSED)  # later iterations end too
            raise StopAsyncIteration
        event: Event = item
        return event


async def iterate_events(producer: Callable[[EventCallback], Awaitable[Any]]) -> AsyncIterator[Event]:
    """Run ``producer(on_event)`` in a task and yield its events as they come.

    The producer's exception, if any, is raised after its last event. Leaving the iteration early
    cancels the producer and waits for it.
    """
    stream = EventStream()

    async def run() -> None:
        try:
            await producer(stream)
        finally:
            stream.close()

    task = asyncio.create_task(run())
    try:
        async for event in stream:
            yield event
        await task
    finally:
        if not task.done():
            task.cancel()
            # gather() propagates our own cancellation but swallows the producer's.
            await asyncio.gather(task, return_exceptions=True)
