"""Running one turn's tool calls: validation, hooks, timeouts and bounded parallelism.

Order of work for a batch (one model reply): for each call in order, the ``iteration start`` event,
the schema check and the pre-hooks (sequential, so approvals are asked one by one and rewrites are
deterministic); then every allowed call runs concurrently, at most ``max_parallel`` at a time, each
under its own timeout and all under the batch timeout (calls that start together with one timeout share
one deadline, with the outcomes of a timer each); then, in the original order, the post-hooks
and the ``iteration done`` event. Results always come back in the order of the calls.

Each call gets its own :class:`~agents.engine.tool_context.ToolCallContext` (its run, id, iteration,
idempotency key), built here before its pre-hooks and handed as an argument to them, to the tool
(``execute(ctx, **arguments)``) and to the post-hooks; when a pre-hook pinned the configuration version it
judged the call under, the tool and the post-hooks get the context with it. Calls running at once never
see each other's.

Durable runs give the runner a :class:`~agents.engine.durable.ToolCallLedger`: every call that is about
to run is recorded first under its idempotency key, and its end after the post-hooks. When a resumed run
replays the calls that were pending (``replay=True``), a call found in the ledger is not run again: its
recorded observation (or, if it never finished, an "outcome unknown" error) stands in, without hooks.

A pre-hook's :class:`~agents.engine.verdicts.Park` stops the batch before any of its calls runs: the
runner returns the verdict instead of records, and the calls stay pending in the run's checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
import time
import types
from collections.abc import Coroutine, Generator, Mapping, Sequence
from typing import Any

from agents.engine import events
from agents.engine.durable.ledger import RecordedCall, ToolCallLedger
from agents.engine.hooks import (
    OUTCOME_BLOCKED,
    OUTCOME_ERROR,
    OUTCOME_INVALID_ARGS,
    OUTCOME_OK,
    OUTCOME_TIMEOUT,
    OUTCOME_UNKNOWN_TOOL,
    HookContext,
    HookRegistry,
)
from agents.engine.parsing import ToolCall
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext, idempotency_key
from agents.engine.tools import (
    ArgumentProblem,
    Tool,
    ToolCallRecord,
    ToolRegistry,
    ToolResult,
    coerce_result,
    invalid_arguments_observation,
    unknown_tool_observation,
)
from agents.engine.verdicts import Block, Park, Rewrite

logger = logging.getLogger(__name__)

NO_OUTPUT = "(the tool returned no output)"
_MAX_EXCEPTION_CHARS = 500


class _Pending:
    """A call between its pre-hooks and its post-hooks."""

    __slots__ = (
        "call",
        "context",
        "tool",
        "args",
        "result",
        "outcome",
        "blocked_by",
        "elapsed",
        "key",
        "iteration",
        "began",
        "replayed",
    )

    def __init__(self, call: ToolCall, context: ToolCallContext, iteration: int, key: str | None) -> None:
        self.call = call
        self.context = context  # what its hooks and its tool are handed
        self.tool: Tool | None = None
        self.args: Mapping[str, Any] = call.args
        self.result: ToolResult | None = None
        self.outcome = OUTCOME_OK
        self.blocked_by: str | None = None
        self.elapsed = 0.0
        self.key = key  # the idempotency key, when a ledger records the call
        self.iteration = iteration
        self.began = False
        self.replayed = False

    def recall(self, recorded: RecordedCall) -> None:
        self.replayed = True
        self.finish(recorded.as_result(), recorded.outcome if recorded.finished else OUTCOME_ERROR)

    def finish(self, result: ToolResult, outcome: str) -> None:
        self.result = result
        self.outcome = outcome
        self.tool = None


class _SharedDeadline:
    """The one deadline of a batch whose calls share their timeout (see :meth:`ToolRunner._execute_many`):
    ``expired`` while the calls it cancelled end, so that each ends as timed out, as under its own timer."""

    __slots__ = ("expired",)

    def __init__(self) -> None:
        self.expired = False


@types.coroutine
def _resumed(coro: Coroutine[Any, Any, Any], waiting_on: Any) -> Generator[Any, Any, Any]:
    """The rest of ``coro``, whose first step already ran and yielded ``waiting_on`` (what the task must
    wait for), awaited as ``await coro`` would have gone on: values sent, exceptions thrown, through."""
    while True:
        try:
            sent = yield waiting_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation (or the task's error) goes into the tool
            try:
                waiting_on = coro.throw(exc)
            except StopIteration as finished:
                return finished.value
        else:
            try:
                waiting_on = coro.send(sent)
            except StopIteration as finished:
                return finished.value


def _timed_out(seconds: float) -> ToolResult:
    return ToolResult.failure(
        f"timed out after {seconds:g} s",
        content=f"Error: the tool timed out after {seconds:g} s and was cancelled.",
    )


class ToolRunner:
    """Executes batches of tool calls for one agent."""

    def __init__(
        self,
        hooks: HookRegistry | None,
        *,
        tool_timeout: float,
        batch_timeout: float,
        max_parallel: int,
        ledger: ToolCallLedger | None = None,
    ) -> None:
        self.hooks = hooks
        self.tool_timeout = tool_timeout
        self.batch_timeout = batch_timeout
        self.max_parallel = max(1, max_parallel)
        self.ledger = ledger

    async def run(
        self,
        calls: Sequence[ToolCall],
        registry: ToolRegistry,
        *,
        iteration: int,
        metadata: RunContext,
        emit: events.Emitter,
        replay: bool = False,
        announced: set[str] | None = None,
    ) -> list[ToolCallRecord] | Park:
        """Run the calls of one model reply; records come back in the calls' order (or a hook's
        :class:`Park`, and no call runs).

        ``replay``: the calls were pending when the run stopped and it now resumes (see the module
        docstring). ``announced`` collects the ids whose ``iteration start`` was emitted; calls already
        in it are not announced again.
        """
        # The ledger records a call under its idempotency key (only a run with an id has one).
        run_id = metadata.run_id if self.ledger is not None else ""
        recorded: Mapping[str, RecordedCall] = {}
        if replay and run_id and self.ledger is not None:
            keys = [idempotency_key(run_id, call.id) for call in calls]
            recorded = await self.ledger.recorded(keys, iteration=iteration)
        pending = []
        for call in calls:
            if emit.active and (announced is None or call.id not in announced):
                await emit(events.iteration_start(iteration, call.name, call.args, call.id))
            if announced is not None:
                announced.add(call.id)
            context = ToolCallContext(call.name, call.id, iteration, metadata, replay)  # positional: per call
            item = _Pending(call, context, iteration, idempotency_key(run_id, call.id) if run_id else None)
            hit = recorded.get(item.key) if item.key is not None else None
            if hit is not None:
                logger.info("replayed tool call %s from the ledger", call.id, extra={"tool_call_id": call.id})
                item.recall(hit)
            else:
                started = time.perf_counter()
                park = await self._prepare(item, registry)
                if park is not None:
                    return park
                item.elapsed = time.perf_counter() - started
            pending.append(item)

        runnable = [p for p in pending if p.tool is not None]
        if len(runnable) == 1:
            await self._execute_one(runnable[0], min(self._timeout_for(runnable[0]), self.batch_timeout))
        elif runnable:
            await self._execute_many(runnable)

        records = []
        for item in pending:
            records.append(await self._finish(item, iteration, emit))
        return records

    def _timeout_for(self, item: _Pending) -> float:
        tool_timeout = item.tool.timeout if item.tool is not None else None
        return tool_timeout if tool_timeout is not None else self.tool_timeout

    async def _prepare(self, item: _Pending, registry: ToolRegistry) -> Park | None:
        """Check the call and run its pre-hooks: ``item.tool`` is set when it may run."""
        call = item.call
        tool = registry.get(call.name)
        if tool is None:
            message = unknown_tool_observation(call.name, registry.names())
            item.finish(
                ToolResult.failure(f"unknown tool '{call.name}'", content=message), OUTCOME_UNKNOWN_TOOL
            )
            return None
        if call.args_error is not None:
            problems = [ArgumentProblem("$", call.args_error)]
        else:
            problems = registry.validate(call.name, call.args)
        if problems:
            self._invalid(item, problems)
            return None
        if self.hooks is not None and self.hooks.has_pre:
            outcome = await self.hooks.run_pre(HookContext(item.context, call.args))
            item.args = outcome.args
            item.context = item.context.with_config_version(outcome.config_version)
            match outcome.verdict:
                case Park() as park:
                    return park
                case Block(reason=reason, hook=hook):
                    reason = reason or "blocked"
                    item.blocked_by = hook or None
                    item.finish(
                        ToolResult.failure(reason, content=f"Tool call blocked: {reason}"),
                        OUTCOME_BLOCKED,
                    )
                    return None
                case Rewrite():
                    problems = registry.validate(call.name, outcome.args)
                    if problems:
                        self._invalid(item, problems)
                        return None
        item.tool = tool
        return None

    @staticmethod
    def _invalid(item: _Pending, problems: list[ArgumentProblem]) -> None:
        summary = "; ".join(f"{p.path}: {p.message}" for p in problems)
        observation = invalid_arguments_observation(item.call.name, problems)
        item.finish(
            ToolResult.failure(f"invalid arguments: {summary}", content=observation), OUTCOME_INVALID_ARGS
        )

    async def _execute_one(self, item: _Pending, limit: float, shared: _SharedDeadline | None = None) -> None:
        """Run the call under its own timer of ``limit`` seconds, or under the batch's ``shared`` deadline
        (of the same ``limit``, kept by the batch) when given."""
        tool = item.tool
        assert tool is not None
        started = time.perf_counter()
        if item.key is not None and self.ledger is not None:
            try:
                await self.ledger.begin(
                    item.key, tool_name=item.call.name, args=item.args, iteration=item.iteration
                )
            except Exception as exc:
                logger.warning(
                    "could not record tool call %s before running it (%s); it was not made",
                    item.call.id,
                    type(exc).__name__,
                    extra={"tool_call_id": item.call.id},
                )
                item.finish(
                    ToolResult.failure("the call could not be recorded, so it was not made"), OUTCOME_ERROR
                )
                return
            item.began = True
        deadline: asyncio.Timeout | None = None
        try:
            call = tool.execute(item.context, **item.args)
            if shared is not None:
                value = await call
            elif not isinstance(call, types.CoroutineType):  # another awaitable: timed from the start
                deadline = asyncio.timeout(limit)
                async with deadline:
                    value = await call
            else:
                # The timer is armed at the call's first wait, for the deadline counted from its start: a
                # call that finishes without waiting (an in-process tool) needs none.
                when = asyncio.get_running_loop().time() + limit
                try:
                    waiting_on = call.send(None)
                except StopIteration as finished:
                    value = finished.value
                else:
                    deadline = asyncio.timeout_at(when)
                    async with deadline:
                        value = await _resumed(call, waiting_on)
        except TimeoutError as exc:
            if deadline.expired() if deadline is not None else shared is not None and shared.expired:
                item.finish(_timed_out(limit), OUTCOME_TIMEOUT)
            else:  # the tool's own timeout error, not ours
                self._failed(item, exc)
        except asyncio.CancelledError:
            if shared is None or not shared.expired:
                raise
            item.finish(_timed_out(limit), OUTCOME_TIMEOUT)  # as asyncio.timeout turns it into TimeoutError
        except Exception as exc:
            self._failed(item, exc)
        else:
            result = coerce_result(value)
            item.finish(result, OUTCOME_ERROR if result.is_error else OUTCOME_OK)
        item.elapsed += time.perf_counter() - started

    @staticmethod
    def _failed(item: _Pending, exc: Exception) -> None:
        logger.warning(
            "tool %s raised %s", item.call.name, type(exc).__name__, extra={"tool_call_id": item.call.id}
        )
        detail = str(exc)[:_MAX_EXCEPTION_CHARS]
        message = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        item.finish(ToolResult.failure(f"the tool failed: {message}"), OUTCOME_ERROR)

    def _shared_timeout(self, items: list[_Pending]) -> float | None:
        """The timeout of every call of the batch when one deadline can stand for their own timers: all
        start together (no semaphore queues them, no ledger write comes first) and share one timeout."""
        if len(items) > self.max_parallel or any(item.key is not None for item in items):
            return None
        timeouts = {self._timeout_for(item) for item in items}
        return timeouts.pop() if len(timeouts) == 1 else None

    async def _execute_many(self, items: list[_Pending]) -> None:
        shared = self._shared_timeout(items)
        if shared is not None:
            await self._execute_together(items, shared)
            return
        semaphore = asyncio.Semaphore(self.max_parallel) if len(items) > self.max_parallel else None

        async def bounded(item: _Pending) -> None:
            if semaphore is None:
                await self._execute_one(item, self._timeout_for(item))
                return
            async with semaphore:
                await self._execute_one(item, self._timeout_for(item))

        tasks = [asyncio.create_task(bounded(item)) for item in items]
        started = time.perf_counter()
        try:
            _done, still_running = await asyncio.wait(tasks, timeout=self.batch_timeout)
        finally:
            # Cancels the unfinished calls on a batch timeout, and every call if the run is cancelled.
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._cut_at_batch_timeout(items, tasks, still_running, started)

    async def _execute_together(self, items: list[_Pending], limit: float) -> None:
        """:meth:`_execute_many` for calls that start together and share their timeout ``limit``: one
        deadline for all instead of a timer each, with the same outcomes. At ``limit`` (when it comes before
        the batch timeout) every call still running is cancelled and ends as timed out after ``limit``, as
        under its own timer; at the batch timeout, whatever still runs is cut as :meth:`_execute_many` cuts it."""
        deadline = _SharedDeadline()
        tasks = [asyncio.create_task(self._execute_one(item, limit, deadline)) for item in items]
        started = time.perf_counter()
        timers_fired = False  # whether the calls' own timers would have fired by now
        try:
            still_running: set[asyncio.Task[None]] = set(tasks)
            if limit < self.batch_timeout:
                _done, still_running = await asyncio.wait(tasks, timeout=limit)
                if still_running:
                    deadline.expired = timers_fired = True
                    for task in still_running:
                        task.cancel()
                    left = self.batch_timeout - (time.perf_counter() - started)
                    _done, still_running = await asyncio.wait(still_running, timeout=left)
            else:
                _done, still_running = await asyncio.wait(tasks, timeout=self.batch_timeout)
        finally:
            deadline.expired = False  # from here a cancellation is the batch's or the run's: it propagates
            unfinished = [task for task in tasks if not task.done()]
            for task in unfinished:
                task.cancel()
            if unfinished and not timers_fired:
                # A call that ignores this cancellation would still meet its own timer: cancel it again then.
                left = max(0.0, limit - (time.perf_counter() - started))
                _done, ignoring = await asyncio.wait(unfinished, timeout=left)
                for task in ignoring:
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._cut_at_batch_timeout(items, tasks, still_running, started)

    def _cut_at_batch_timeout(
        self,
        items: list[_Pending],
        tasks: list[asyncio.Task[None]],
        still_running: set[asyncio.Task[None]],
        started: float,
    ) -> None:
        """The calls whose task still ran at the batch timeout end timed out, after all the batch waited."""
        waited = time.perf_counter() - started
        for item, task in zip(items, tasks, strict=True):
            if task in still_running:
                item.finish(_timed_out(self.batch_timeout), OUTCOME_TIMEOUT)
                item.elapsed += waited

    async def _finish(self, item: _Pending, iteration: int, emit: events.Emitter) -> ToolCallRecord:
        call = item.call
        result = item.result
        assert result is not None
        if self.hooks is not None and self.hooks.has_post and not item.replayed:
            started = time.perf_counter()
            ctx = HookContext(item.context, item.args, item.outcome, item.blocked_by)
            result = await self.hooks.run_post(ctx, result)
            item.elapsed += time.perf_counter() - started
        observation = result.observation or NO_OUTPUT
        error = (result.error or "error") if result.is_error else None
        elapsed = round(item.elapsed, 4)
        if item.began and item.key is not None and self.ledger is not None:
            try:
                await self.ledger.finish(item.key, observation=observation, error=error, outcome=item.outcome)
            except Exception as exc:  # a replay then reports "outcome unknown": never a second call
                logger.warning("could not record the end of tool call %s (%s)", call.id, type(exc).__name__)
        if emit.active:
            artifacts = [a.describe() for a in result.artifacts] if result.artifacts else None
            citations = [c.describe() for c in result.citations] if result.citations else None
            await emit(
                events.iteration_done(
                    iteration,
                    call.name,
                    observation,
                    error,
                    elapsed,
                    call.id,
                    outcome=item.outcome,
                    tool_args=item.args,
                    artifacts=artifacts,
                    citations=citations,
                )
            )
        return ToolCallRecord(
            call.id, call.name, item.args, observation, error, item.outcome, iteration, elapsed, result
        )
