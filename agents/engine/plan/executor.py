"""The plan executor: runs a plan's steps, each as a fresh ReAct agent, as soon as their dependencies are done.

- At most ``max_concurrency`` steps run at once (an ``asyncio.Semaphore``); ready steps are launched in id
  order. Each step is a NEW :class:`ReActAgent` (no memory) on ``registry.get(step.model_hint)``, with the
  executor's tools and the SAME :class:`HookRegistry`, so every guard rail applies to step tool calls. Its
  metadata carries ``plan_step_id`` and ``plan_round`` so hooks can attribute approvals to the step.
- A step's input is its task, the goal and its dependencies' results (cut; tables and code get more room).
- ``step_timeout`` seconds per step: the step is stopped and ``failed`` ("timed out after N s").
- A step whose dependency failed, was skipped or was cancelled is failed with a reason
  ("dependency X failed") instead of waiting forever; so is a step that can never become ready.
- ``stop`` (set on a user follow-up) ends the round gracefully: pending steps are ``skipped``, running
  steps finish. :meth:`PlanExecutor.cancel` ends it at once: running steps are stopped and every step not
  finished is ``cancelled``.
- Step results are the step agents' answers (no synthesis per step). Statuses are reported as ``plan``
  step events, tool calls inside a step as ``plan`` step_iteration events.
- Durable runs: each step agent checkpoints into ``step.checkpoint`` (and ``on_checkpoint`` is awaited
  after each of its checkpoints and each finished step); a step with a checkpoint resumes from it. A step
  whose agent is parked (a hook's verdict was ``Park``) goes back to ``pending`` with its checkpoint; no
  other step starts, running ones finish (or park too), and :attr:`PlanExecutor.park` says why.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any

from agents.engine import events
from agents.engine.durable.checkpoint import Checkpoint, checkpoint_apply
from agents.engine.events import Emitter, Event, EventCallback
from agents.engine.hooks import HookRegistry
from agents.engine.llm import Usage
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan import prompts
from agents.engine.plan.models import (
    CANCELLED,
    DONE,
    FAILED,
    PENDING,
    RUNNING,
    SKIPPED,
    TERMINAL,
    Plan,
    PlanStep,
    id_order,
)
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.run_state import AgentResult
from agents.engine.stop_reasons import StopReason
from agents.engine.synthesis import cut
from agents.engine.tools import ToolRegistry
from agents.engine.verdicts import Park

logger = logging.getLogger(__name__)

MAX_CONCURRENCY = 5
STEP_TIMEOUT = 600.0
DEPENDENCY_RESULT_CHARS = 3000
STRUCTURED_RESULT_CHARS = 8000
EVENT_RESULT_CHARS = 4000
# Step agents never take follow-ups: they are the plan agent's (they stop the round).
_RESERVED_OPTIONS = frozenset({"follow_ups", "hooks", "llm", "tools", "tool_call_id_prefix"})

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.MULTILINE)
_TAB_ROW = re.compile(r"^[^\t\n]*\t[^\t\n]*\t", re.MULTILINE)


def looks_structured(text: str) -> bool:
    """Whether ``text`` looks like a table, code or JSON (cut later than prose: its value is in the rows)."""
    stripped = text.lstrip()
    if "```" in text or stripped.startswith(("{", "[")):
        return True
    return len(_TABLE_ROW.findall(text)) >= 3 or len(_TAB_ROW.findall(text)) >= 3


def dependency_result(text: str) -> str:
    """A dependency's result as a step sees it: cut, with a larger budget for tables and code."""
    return cut(text, STRUCTURED_RESULT_CHARS if looks_structured(text) else DEPENDENCY_RESULT_CHARS)


def step_input(plan: Plan, step: PlanStep) -> str:
    """The query of a step's agent: the goal, its task, a tool hint, its dependencies' results."""
    parts = [prompts.STEP_TASK.format(goal=plan.goal, step_id=step.id, task=step.task)]
    if step.tool_hint:
        parts.append(prompts.STEP_TOOL_HINT.format(tool=step.tool_hint))
    if step.dependencies:
        parts.append(prompts.STEP_DEPENDENCIES)
        for dependency_id in step.dependencies:
            dependency = plan.step(dependency_id)
            parts.append(
                prompts.STEP_DEPENDENCY.format(
                    step_id=dependency.id, task=dependency.task, result=dependency_result(dependency.result)
                )
            )
    parts.append(prompts.STEP_CLOSING)
    return "\n\n".join(parts)


class _StepRun:
    """A launched step: its task and, once it runs, its agent (what cancel() and the timeout stop)."""

    __slots__ = ("step", "task", "agent", "timed_out")

    def __init__(self, step: PlanStep) -> None:
        self.step = step
        self.task: asyncio.Task[None] | None = None
        self.agent: ReActAgent | None = None
        self.timed_out = False

    def stop(self) -> None:
        if self.agent is not None:
            self.agent.cancel()  # the agent ends its run with a cancelled result (usage kept)
        elif self.task is not None:
            self.task.cancel()  # still waiting for a slot


class PlanExecutor:
    """Executes plans (see the module docstring). One ``execute()`` at a time per executor."""

    def __init__(
        self,
        registry: ModelRegistry,
        tools: ToolRegistry,
        *,
        hooks: HookRegistry | None = None,
        max_concurrency: int = MAX_CONCURRENCY,
        step_timeout: float = STEP_TIMEOUT,
        agent_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.registry = registry
        self.tools = tools
        self.hooks = hooks
        self.max_concurrency = max(1, max_concurrency)
        self.step_timeout = step_timeout
        self.agent_options = {k: v for k, v in (agent_options or {}).items() if k not in _RESERVED_OPTIONS}
        self._runs: dict[str, _StepRun] = {}
        self._active = False
        self._cancel_requested = False
        self.park: Park | None = None

    def cancel(self) -> None:
        """Stop the running ``execute()`` now: running steps are stopped, unfinished steps ``cancelled``.
        Called while idle, it cancels the next ``execute()`` as soon as it starts."""
        self._cancel_requested = True
        for run in list(self._runs.values()):
            run.stop()

    async def execute(
        self,
        plan: Plan,
        *,
        on_event: EventCallback | None = None,
        stop: asyncio.Event | None = None,
        metadata: RunContext | Mapping[str, Any] | None = None,
        usage: Usage | None = None,
        on_checkpoint: Callable[[], Awaitable[None]] | None = None,
        language: str | None = None,
    ) -> Plan:
        """Run ``plan``'s pending steps; returns the same plan with every step in a final status (but
        for steps left pending by a parked step: see :attr:`park`).

        ``usage`` (when given) accumulates the step agents' token usage; ``language`` (the user's interface
        language) is the step agents' (their stop messages). Never raises for step failures; cancelling the
        awaiting task cancels every step and propagates.
        """
        if self._active:
            raise RuntimeError("this executor is already running a plan")
        self._active = True
        self.park = None
        emit = Emitter(on_event)
        execution = _Execution(
            self, plan, emit, stop, RunContext.of(metadata), usage, on_checkpoint, language=language
        )
        try:
            await execution.drive()
        finally:
            for run in self._runs.values():
                if run.task is not None and not run.task.done():
                    run.task.cancel()
            pending = [r.task for r in self._runs.values() if r.task is not None]
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            self._runs.clear()
            self._active = False
            self._cancel_requested = False
        return plan

    def _agent(self, step: PlanStep, round_: int) -> ReActAgent:
        """A fresh agent for ``step``: the model of its hint, the shared tools and hooks, and JSON-mode call
        ids of its own (``r<round>.<step id>.json_call_<n>``: hooks key their state by call id)."""
        return ReActAgent(
            self.registry.get(step.model_hint),
            self.tools,
            hooks=self.hooks,
            tool_call_id_prefix=f"r{round_}.{step.id}.",
            **self.agent_options,
        )


class _Execution:
    """The state of one ``execute()``."""

    def __init__(
        self,
        executor: PlanExecutor,
        plan: Plan,
        emit: Emitter,
        stop: asyncio.Event | None,
        metadata: RunContext,
        usage: Usage | None,
        on_checkpoint: Callable[[], Awaitable[None]] | None = None,
        *,
        language: str | None = None,
    ) -> None:
        self.executor = executor
        self.language = language
        self.plan = plan
        self.emit = emit
        self.stop = stop
        self.metadata = metadata
        self.usage = usage
        self.on_checkpoint = on_checkpoint
        self.semaphore = asyncio.Semaphore(executor.max_concurrency)
        self.by_id = {step.id: step for step in plan.steps}
        self.order = sorted(plan.steps, key=lambda s: id_order(s.id))

    @property
    def runs(self) -> dict[str, _StepRun]:
        return self.executor._runs

    async def drive(self) -> None:
        stop_waiter = asyncio.create_task(self.stop.wait()) if self.stop is not None else None
        try:
            while not self.executor._cancel_requested:
                await self._fail_blocked()
                if self.stop is not None and self.stop.is_set():
                    await self._skip_pending()
                elif self.executor.park is None:  # a parked step: start nothing new
                    self._launch_ready()
                if not self.runs:
                    break
                waiters: set[asyncio.Future[Any]] = {r.task for r in self.runs.values() if r.task}
                if stop_waiter is not None and not stop_waiter.done():
                    waiters.add(stop_waiter)
                finished, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                for run in [r for r in self.runs.values() if r.task in finished]:
                    del self.runs[run.step.id]
                    await self._collect(run)
            if self.executor._cancel_requested:
                await self._drain()
                for step in self.order:
                    if step.status in (PENDING, RUNNING):
                        await self._set(step, CANCELLED)
            elif self.executor.park is None:
                await self._fail_stuck()
        finally:
            if stop_waiter is not None:
                stop_waiter.cancel()
                await asyncio.gather(stop_waiter, return_exceptions=True)

    async def _drain(self) -> None:
        """After cancel(): wait for the launched steps, which cancel() told to stop, and record them."""
        runs = list(self.runs.values())
        tasks = [r.task for r in runs if r.task is not None]
        if tasks:
            await asyncio.wait(tasks)
        for run in runs:
            del self.runs[run.step.id]
            await self._collect(run)

    async def _set(self, step: PlanStep, status: str, *, error: str | None = None) -> None:
        step.status = status
        if error is not None:
            step.error = error
        if status in TERMINAL and step.started_at is not None:
            step.finished_at = time.monotonic()
        if self.emit.active:
            result = cut(step.result, EVENT_RESULT_CHARS) if status == DONE or step.result else None
            await self.emit(
                events.plan_step(
                    self.plan.round,
                    step.id,
                    status,
                    result=result if status in TERMINAL else None,
                    error=step.error if status in TERMINAL else None,
                    elapsed=step.elapsed if status in TERMINAL else None,
                )
            )

    async def _fail_blocked(self) -> None:
        """Fail every pending step with a dependency that can no longer finish (cascading)."""
        changed = True
        while changed:
            changed = False
            for step in self.order:
                if step.status != PENDING or step.id in self.runs:
                    continue
                for dependency_id in step.dependencies:
                    dependency = self.by_id.get(dependency_id)
                    if dependency is None or dependency.status in (FAILED, SKIPPED, CANCELLED):
                        how = "does not exist" if dependency is None else _PAST[dependency.status]
                        await self._set(step, FAILED, error=f"dependency {dependency_id} {how}")
                        changed = True
                        break

    async def _fail_stuck(self) -> None:
        """Steps still pending when nothing runs can never start (a dependency cycle): fail them."""
        for step in self.order:
            if step.status == PENDING:
                await self._set(step, FAILED, error="its dependencies can never finish (a dependency cycle)")

    async def _skip_pending(self) -> None:
        for step in self.order:
            if step.status == PENDING:
                await self._set(step, SKIPPED)

    def _launch_ready(self) -> None:
        for step in self.order:
            if step.status != PENDING or step.id in self.runs:
                continue
            if all(self.by_id[d].status == DONE for d in step.dependencies if d in self.by_id):
                run = _StepRun(step)
                run.task = asyncio.create_task(self._run_step(run), name=f"plan-step-{step.id}")
                self.runs[step.id] = run

    async def _collect(self, run: _StepRun) -> None:
        """Record how a finished step task ended (the status of a normal ending is already set)."""
        task = run.task
        assert task is not None
        step = run.step
        if task.cancelled():
            if step.status not in TERMINAL:
                await self._set(step, CANCELLED)
            return
        exc = task.exception()
        if exc is not None and step.status not in TERMINAL:
            logger.warning("plan step %s raised %s", step.id, type(exc).__name__)
            await self._set(step, FAILED, error=f"the step failed: {type(exc).__name__}")

    async def _run_step(self, run: _StepRun) -> None:
        step = run.step
        executor = self.executor
        async with self.semaphore:
            if step.status != PENDING or executor._cancel_requested:
                return
            if self.stop is not None and self.stop.is_set():
                await self._set(step, SKIPPED)
                return
            step.started_at = time.monotonic()
            await self._set(step, RUNNING)
            run.agent = agent = executor._agent(step, self.plan.round)
            metadata = replace(self.metadata, plan_step_id=step.id, plan_round=self.plan.round)

            def time_out() -> None:
                run.timed_out = True
                agent.cancel()

            timer = asyncio.get_running_loop().call_later(executor.step_timeout, time_out)
            try:
                result = await agent.run(
                    step_input(self.plan, step),
                    on_event=self._forwarder(step) if self.emit.active else None,
                    metadata=metadata,
                    resume_from=step.checkpoint,
                    checkpoint=self._step_checkpointer(step) if self.on_checkpoint is not None else None,
                    language=self.language,
                )
            finally:
                timer.cancel()
            await self._finish(run, result)

    def _step_checkpointer(self, step: PlanStep) -> Callable[[Checkpoint], Awaitable[None]]:
        async def checkpoint(delta: Checkpoint) -> None:
            step.checkpoint = checkpoint_apply(step.checkpoint, delta.as_dict())
            await self._checkpoint()

        return checkpoint

    async def _checkpoint(self) -> None:
        if self.on_checkpoint is not None:
            await self.on_checkpoint()

    async def _finish(self, run: _StepRun, result: AgentResult) -> None:
        step = run.step
        if result.park is not None:
            # Parked: the step resumes from its checkpoint (its usage counts when it finishes).
            step.status = PENDING
            if self.executor.park is None:
                self.executor.park = result.park
            logger.info("plan step %s parked", step.id)
            await self._checkpoint()
            return
        step.checkpoint = None
        step.iterations = result.iterations
        step.tool_calls = list(result.tool_calls)
        step.usage = result.usage
        if self.usage is not None:
            self.usage.add(result.usage)
        if run.timed_out:
            await self._set(step, FAILED, error=f"timed out after {self.executor.step_timeout:g} s")
        elif result.cancelled:
            await self._set(step, CANCELLED)
        elif result.stop_reason in (StopReason.FINAL_ANSWER, StopReason.UNPARSED_OUTPUT):
            step.result = result.answer
            await self._set(step, DONE)
        else:  # llm_error, max_iterations, token_budget, empty_response: the answer summarises what happened
            step.result = result.answer
            await self._set(step, FAILED, error=f"the step's agent stopped: {result.stop_reason}")
        await self._checkpoint()
        logger.info(
            "plan step %s %s after %d iterations",
            step.id,
            step.status,
            step.iterations,
            extra={"run_id": self.metadata.run_id, "org_id": self.metadata.org_id},
        )

    def _forwarder(self, step: PlanStep) -> EventCallback:
        round_ = self.plan.round

        async def forward(event: Event) -> None:
            if event.channel == events.STEP and event.data.get("type") == "iteration":
                await self.emit(events.plan_step_iteration(round_, step.id, event.data))

        return forward


_PAST = {FAILED: "failed", SKIPPED: "was skipped", CANCELLED: "was cancelled"}

__all__ = ["PlanExecutor", "dependency_result", "looks_structured", "step_input"]
