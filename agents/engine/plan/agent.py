"""The plan agent: plan, execute, analyse, re-plan; then stream a synthesised answer.

Rounds: up to ``max_rounds`` (3) rounds are spent; the run stops when the analyser says the goal is
achieved, when its confidence is at least ``confidence_threshold`` (0.8), or when the budget is spent.
A user follow-up (the ``follow_ups`` queue is not empty) stops the current round gracefully (pending steps
skipped, running steps finish) and ALWAYS re-plans, without spending budget, with the follow-up appended
to the goal. Re-planning shows the planner every earlier step in at most 500 characters.

If the first plan cannot be made (:class:`PlanValidationError`), the goal runs as a single step; if a
re-plan cannot be made, the run ends with what it has (``planning_failed``).

Events: ``phase`` planning / executing / analyzing / replanning (with the analyser's reasoning), ``plan``
dag / step / step_iteration, ``inject`` for follow-ups, then ``answer`` and ``done`` from
:meth:`PlanAgent.stream_synthesize`. Cancellation mirrors :class:`ReActAgent`: :meth:`PlanAgent.cancel`
ends the run with a cancelled result (and a cancelled ``done``); cancelling the awaiting task propagates.

Durable runs mirror it too: ``run(checkpoint=...)`` reports the whole plan state (see ``plan.checkpoint``)
after each plan, step, step-agent iteration and analysis; ``run(resume_from=checkpoint)`` continues from
it (finished steps are kept, unfinished ones resume from their own checkpoints); a parked step parks
the run (``stop_reason="parked"``, no ``done``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import date
from typing import Any

from agents.engine import events
from agents.engine.durable.checkpoint import Checkpoint, CheckpointCallback
from agents.engine.events import Emitter, Event, EventCallback
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.hooks import HookRegistry
from agents.engine.llm import Message
from agents.engine.metering import BudgetRefusal, budget_watch
from agents.engine.model_registry import GENERAL, ModelRegistry
from agents.engine.plan import prompts
from agents.engine.plan.analyzer import PlanAnalyzer
from agents.engine.plan.executor import MAX_CONCURRENCY, STEP_TIMEOUT, PlanExecutor
from agents.engine.plan.models import (
    Plan,
    PlanResult,
    PlanStep,
    PlanValidationError,
)
from agents.engine.plan.planner import Planner
from agents.engine.plan.state import ANSWER, DECIDING, EXECUTING, PLANNING, PlanRunState
from agents.engine.plan.synthesis import replan_context, stream_plan_answer
from agents.engine.prompts import stopped_by_budget
from agents.engine.run_context import RunContext
from agents.engine.run_events import RunAsEvents
from agents.engine.stop_reasons import StopReason
from agents.engine.synthesis import Answered
from agents.engine.tools import ToolRegistry

logger = logging.getLogger(__name__)

MAX_ROUNDS = 3
CONFIDENCE_THRESHOLD = 0.8
FOLLOW_UP_REASONING = "The user sent a follow-up; planning again with it."
PLANNING_FAILED_REASONING = "No valid plan could be made; running the goal as a single step."


class _Cancelled(Exception):
    """cancel() was called: unwind to run(), which reports the cancelled result."""


class PlanAgent(RunAsEvents[PlanResult]):
    """Plan-mode orchestrator with the outer shape of :class:`ReActAgent` (see the module docstring)."""

    def __init__(
        self,
        registry: ModelRegistry,
        tools: ToolRegistry,
        *,
        hooks: HookRegistry | None = None,
        max_rounds: int = MAX_ROUNDS,
        confidence_threshold: float = CONFIDENCE_THRESHOLD,
        max_concurrency: int = MAX_CONCURRENCY,
        step_timeout: float = STEP_TIMEOUT,
        follow_ups: FollowUpQueue | None = None,
        system_prompt: str = "",
        agent_options: Mapping[str, Any] | None = None,
        planner: Planner | None = None,
        analyzer: PlanAnalyzer | None = None,
        today: Callable[[], date] = date.today,
    ) -> None:
        self.registry = registry
        self.tools = tools
        self.hooks = hooks
        self.max_rounds = max(1, max_rounds)
        self.confidence_threshold = confidence_threshold
        self.follow_ups = follow_ups
        self.system_prompt = system_prompt
        self.planner = planner if planner is not None else Planner(registry, today=today)
        self.analyzer = analyzer if analyzer is not None else PlanAnalyzer(registry)
        options = dict(agent_options or {})
        if system_prompt:
            options.setdefault("system_prompt", system_prompt)
        self.executor = PlanExecutor(
            registry,
            tools,
            hooks=hooks,
            max_concurrency=max_concurrency,
            step_timeout=step_timeout,
            agent_options=options,
        )
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False
        self._executing = False
        self._refusals: list[BudgetRefusal] = []
        self._checkpoint_cb: CheckpointCallback | None = None

    # -- cancellation (as ReActAgent) -----------------------------------------------------------

    def cancel(self) -> None:
        """Stop the active ``run()`` or ``stream_synthesize()``: running steps are cancelled and the run
        returns a cancelled result (``done`` with ``cancelled: true``). Called while idle, it stops the
        next ``run()``/``stream_synthesize()`` as soon as it starts."""
        self._cancel_requested = True
        if self._executing:
            self.executor.cancel()  # execute() returns with the steps cancelled
            return
        task = self._task
        if task is not None and not task.done():
            task.cancel()

    def _enter(self) -> asyncio.Task[Any] | None:
        if self._task is not None:
            raise RuntimeError("this agent is already running; create one agent per concurrent run")
        self._task = asyncio.current_task()
        return self._task

    def _leave(self) -> None:
        self._task = None
        self._cancel_requested = False
        self._executing = False
        self._checkpoint_cb = None

    def _absorb_cancel(self, task: asyncio.Task[Any] | None) -> bool:
        requested = self._cancel_requested
        self._leave()
        return requested and task is not None and task.uncancel() == 0

    def _check_cancel(self) -> None:
        if self._cancel_requested:
            raise _Cancelled

    # -- running ---------------------------------------------------------------------------------

    async def run(
        self,
        goal: str,
        *,
        history: Sequence[Message] | None = None,
        on_event: EventCallback | None = None,
        metadata: RunContext | Mapping[str, Any] | None = None,
        resume_from: Mapping[str, Any] | None = None,
        checkpoint: CheckpointCallback | None = None,
        language: str | None = None,
    ) -> PlanResult:
        """Plan and execute ``goal`` over up to ``max_rounds`` rounds (see the module docstring).

        ``language`` is the user's interface language (a code such as ``zh-hans``): a budget's stop message
        is written in it (``None``: in the goal's language).

        ``history`` is the conversation before the goal (summarised for the planner when long);
        ``metadata`` reaches every hook of every step (with ``plan_step_id`` and ``plan_round`` added).
        Never raises for model or tool failures. ``done`` comes from :meth:`stream_synthesize` (or from here
        for a cancelled run). ``checkpoint`` and ``resume_from``: durable runs (module docstring).
        """
        task = self._enter()
        meta = RunContext.of(metadata)
        try:
            if resume_from is not None:
                state = PlanRunState.restore(resume_from, meta, Emitter(on_event), language=language)
            else:
                state = PlanRunState(goal, meta, Emitter(on_event), language=language)
        except Exception:
            self._leave()
            raise
        self._checkpoint_cb = checkpoint
        try:
            if not self._cancel_requested:
                with budget_watch() as self._refusals:
                    return await self._budget_ended(await self._run(state, history or ()))
        except _Cancelled:
            self._leave()
        except asyncio.CancelledError:
            if not self._absorb_cancel(task):
                raise
        finally:
            self._leave()
        logger.info("plan run cancelled after %d round(s)", len(state.plans))
        result = state.result(StopReason.CANCELLED, cancelled=True)
        await state.emit(events.cancelled_done(result.iterations, result.usage.as_dict(), result.elapsed))
        return result

    async def answer(self, result: PlanResult, *, on_event: EventCallback | None = None) -> Answered:
        """Stream the answer synthesised from the goal and the steps' results, then emit ``done``; what it
        came to.

        Emits ``answer`` start, deltas and done. Fallbacks: the analyser's ``final_answer``, else the
        finished steps' results joined (``answer`` done with ``fallback: true``); a budget that refuses the
        synthesis ends the run with ``budget_exceeded``, the answer naming it first. For a cancelled result
        nothing is emitted; :meth:`cancel` during the stream ends it with a cancelled ``done``.
        """
        task = self._enter()
        emit = Emitter(on_event)
        try:
            if not self._cancel_requested:
                return await stream_plan_answer(
                    self.registry.get(GENERAL), result, emit, lambda: self._absorb_cancel(task)
                )
        finally:
            self._leave()
        await emit(events.cancelled_done(result.iterations, result.usage.as_dict(), result.elapsed))
        return Answered("", StopReason.CANCELLED, cancelled=True)

    async def stream_synthesize(self, result: PlanResult, *, on_event: EventCallback | None = None) -> str:
        """The text of :meth:`answer`."""
        return (await self.answer(result, on_event=on_event)).text

    async def _run(self, state: PlanRunState, history: Sequence[Message]) -> PlanResult:
        if state.final is not None:  # resumed after the run had ended: straight to the answer
            return state.result(StopReason(state.final))
        if not state.plans and state.stage == PLANNING and state.round == 1 and state.seq == 0:
            await state.emit(events.plan_phase("planning", 1))
        while True:
            if state.stage == PLANNING:
                plan = await self._plan(state, history, state.feedback, state.round)
                self._check_cancel()
                if self._refusals:
                    return await self._end(state, StopReason.BUDGET_EXCEEDED)
                if plan is None:
                    return await self._end(state, StopReason.PLANNING_FAILED)
                state.plans.append(plan)
                await state.emit(events.plan_dag(plan.round, plan.describe()))
                state.stage = EXECUTING
                await self._checkpoint(state)
            if state.stage == EXECUTING:
                plan = state.plans[-1]
                await self._execute(state, plan)
                if self.executor.park is not None:
                    await self._checkpoint(state)
                    return state.result(StopReason.PARKED, park=self.executor.park)
                if self._refusals:
                    return await self._end(state, StopReason.BUDGET_EXCEEDED)
                followed_up = await self._take_follow_ups(state)
                if not followed_up:
                    state.spent += 1
                    await state.emit(events.plan_phase("analyzing", plan.round))
                    state.analysis = await self.analyzer.analyze(plan, usage=state.usage)
                    self._check_cancel()
                    if self._refusals:
                        return await self._end(state, StopReason.BUDGET_EXCEEDED)
                    state.analyses[plan.round] = state.analysis
                    followed_up = await self._take_follow_ups(state)
                state.followed_up = followed_up
                state.stage = DECIDING
                await self._checkpoint(state)
            if state.followed_up:
                reasoning = FOLLOW_UP_REASONING
            else:
                analysis = state.analysis
                assert analysis is not None
                if analysis.achieved:
                    return await self._end(state, StopReason.ACHIEVED)
                if analysis.confidence >= self.confidence_threshold:
                    return await self._end(state, StopReason.CONFIDENT)
                if state.spent >= self.max_rounds:
                    return await self._end(state, StopReason.MAX_ROUNDS)
                reasoning = analysis.reasoning
            state.round += 1
            state.feedback = replan_context(state.plans, state.analyses)
            state.stage = PLANNING
            await state.emit(events.plan_phase("replanning", state.round, reasoning=reasoning))
            await self._checkpoint(state)

    async def _budget_ended(self, result: PlanResult) -> PlanResult:
        """A run a budget ended answers why first (in the user's language, else the goal's), then what it
        has."""
        if result.stop_reason != StopReason.BUDGET_EXCEEDED or not self._refusals:
            return result
        budget = self._refusals[0].label_for(result.goal, result.language)
        answer = stopped_by_budget(result.answer, query=result.goal, language=result.language, budget=budget)
        return dataclasses.replace(result, answer=answer)

    async def _end(self, state: PlanRunState, stop_reason: StopReason) -> PlanResult:
        state.stage, state.final = ANSWER, stop_reason
        await self._checkpoint(state)
        return state.result(stop_reason)

    async def _checkpoint(self, state: PlanRunState) -> None:
        callback = self._checkpoint_cb
        if callback is None:
            return
        state.seq += 1
        try:
            await callback(Checkpoint(state.seq, state.full_checkpoint(), [], [], True))
        except Exception as exc:
            logger.warning("checkpoint callback failed: %s", type(exc).__name__)

    async def _plan(
        self, state: PlanRunState, history: Sequence[Message], feedback: str | None, round_number: int
    ) -> Plan | None:
        try:
            return await self.planner.plan(
                state.goal,
                tools=self.tools,
                history=history,
                feedback=feedback,
                usage=state.usage,
                round_number=round_number,
                instructions=self.system_prompt,
            )
        except PlanValidationError as exc:
            if round_number > 1:
                logger.warning("re-planning failed (%s); ending the run with what it has", exc)
                return None
            logger.warning("planning failed (%s); running the goal as one step", exc)
            await state.emit(events.plan_phase("planning", round_number, reasoning=PLANNING_FAILED_REASONING))
            return Plan(goal=state.goal, steps=[PlanStep(id="1", task=state.goal)], round=round_number)

    async def _execute(self, state: PlanRunState, plan: Plan) -> None:
        await state.emit(events.plan_phase("executing", plan.round))
        stop = asyncio.Event()
        queue = self.follow_ups
        if queue is not None and queue.pending:
            stop.set()  # a follow-up came during planning: this plan is already out of date

        async def watch(event: Event) -> None:
            await state.emit(event)
            if queue is not None and queue.pending and not stop.is_set():
                stop.set()  # a follow-up: finish the running steps, skip the rest, re-plan

        async def step_checkpoint() -> None:
            await self._checkpoint(state)

        self._executing = True
        try:
            await self.executor.execute(
                plan,
                on_event=watch,
                stop=stop,
                metadata=state.metadata,
                usage=state.usage,
                on_checkpoint=step_checkpoint if self._checkpoint_cb is not None else None,
                language=state.language,
            )
        finally:
            self._executing = False
        self._check_cancel()

    async def _take_follow_ups(self, state: PlanRunState) -> bool:
        """Append queued follow-ups to the goal (one ``inject`` event each); whether there were any."""
        queue = self.follow_ups
        contents = queue.drain() if queue is not None else []
        if not contents:
            return False
        state.follow_ups_taken += len(contents)
        for content in contents:
            state.goal = f"{state.goal}\n\n{prompts.FOLLOW_UP.format(content=content)}"
            await state.emit(events.follow_up_taken(content))
        return True


__all__ = ["CONFIDENCE_THRESHOLD", "MAX_ROUNDS", "PlanAgent"]
