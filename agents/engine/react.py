"""The ReAct agent: the tool loop (JSON mode or native function calling) and answer synthesis.

``run()`` drives the loop: ask the model (non-streaming), run the tools it asks for, append the
observations, repeat until it gives a final answer; ``stream_answer()`` then streams the user-facing
answer. Cancellation: ``agent.cancel()`` stops the run at its next await (in-flight tools are
cancelled) and ``run()`` returns a result with ``cancelled=True`` after emitting ``done``; cancelling
the task that awaits ``run()`` instead propagates ``CancelledError`` (after the same cleanup), as
asyncio code expects.

Durable runs: ``run(checkpoint=...)`` reports a :class:`~agents.engine.durable.checkpoint.Checkpoint` after every
model reply that asks for tools (the calls are then pending) and after every iteration;
``run(resume_from=checkpoint)`` continues from the last one, replaying pending calls through the tool
ledger so none runs twice. A hook's :class:`~agents.engine.verdicts.Park` parks the run.

One loop serves both modes; what differs (the request, how a reply is read) is a :class:`_Mode`. A turn
comes to a :mod:`~agents.engine.turn` outcome: continue, the final result, or parked.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agents.engine import events, prompts
from agents.engine.abilities import JSON_MODE, PARALLEL_TOOL_CALLS, RunAbilities, declared, has
from agents.engine.abilities import TOOL_CALL as FUNCTION_CALLING
from agents.engine.attachments import question_content
from agents.engine.durable.checkpoint import CheckpointCallback
from agents.engine.durable.ledger import ToolCallLedger
from agents.engine.events import CLOSED_CANCELLED, Emitter, Event, EventCallback
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.guidance import after_tool_calls, completion_check_due, drain_follow_ups
from agents.engine.hooks import HookRegistry, SessionContext
from agents.engine.llm import LLM, ChatResponse, Message, ToolCallRequest
from agents.engine.metering import BudgetExceededError
from agents.engine.model_call import LLMFailed, ask, tool_calls_in_text
from agents.engine.parsing import TOOL_CALL, ToolCall, json_tool_call, native_tool_call, parse_action
from agents.engine.react_durable import DurableLoop
from agents.engine.run_context import RunContext
from agents.engine.run_events import RunAsEvents
from agents.engine.run_state import AgentResult, RunState, note
from agents.engine.selection import select_tools
from agents.engine.stop_reasons import StopReason
from agents.engine.synthesis import Answered
from agents.engine.synthesis import stream_answer as _stream_answer
from agents.engine.tool_runner import ToolRunner
from agents.engine.tools import ToolCallRecord, ToolRegistry
from agents.engine.transcript import Transcript
from agents.engine.turn import CONTINUE, Continue, Final, TurnOutcome, TurnParked
from agents.engine.verdicts import Park

logger = logging.getLogger(__name__)

MAX_ITERATIONS = 50
TOOL_SELECTION_THRESHOLD = 12
TOOL_SELECTION_MAX = 6
SELF_REFLECTION_INTERVAL = 6
TOOL_TIMEOUT = 60.0
BATCH_TIMEOUT = 90.0
MAX_PARALLEL_TOOLS = 4
DEFAULT_COMPLETION_CHECK_MIN_TOOLS = 3
DEFAULT_CYCLE_DETECTION_THRESHOLD = 3


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        logger.warning("ignoring %s=%r: not an integer", name, raw)
        return default


def _cancelled_done(result: AgentResult) -> Event:
    return events.cancelled_done(result.iterations, result.usage.as_dict(), result.elapsed)


@dataclass(frozen=True, slots=True)
class _Mode:
    """What differs between native function calling and JSON mode: the request's options (asked every
    turn, built again only when the endpoint's abilities changed: a refusal) and how a reply is read."""

    request: Callable[[], Mapping[str, Any]]
    turn: Callable[[RunState, ChatResponse], Awaitable[TurnOutcome]]


class ReActAgent(DurableLoop, RunAsEvents[AgentResult]):
    """A ReAct agent bound to one LLM and one set of tools (see the module docstring)."""

    def __init__(
        self,
        llm: LLM,
        tools: ToolRegistry,
        *,
        system_prompt: str = "",
        hooks: HookRegistry | None = None,
        use_native_tools: bool = True,
        max_iterations: int = MAX_ITERATIONS,
        completion_check: bool = True,
        completion_check_min_tools: int | None = None,
        cycle_detection_threshold: int | None = None,
        self_reflection_interval: int = SELF_REFLECTION_INTERVAL,
        tool_selection_threshold: int = TOOL_SELECTION_THRESHOLD,
        tool_selection_max: int = TOOL_SELECTION_MAX,
        tool_timeout: float = TOOL_TIMEOUT,
        batch_timeout: float = BATCH_TIMEOUT,
        max_parallel_tools: int = MAX_PARALLEL_TOOLS,
        token_budget: int | None = None,
        context_guard: Any | None = None,
        follow_ups: FollowUpQueue | None = None,
        tool_call_id_prefix: str = "",
        ledger: ToolCallLedger | None = None,
    ) -> None:
        self._llm = llm
        self._tools = tools
        self.system_prompt = system_prompt
        self.hooks = hooks
        self.use_native_tools = use_native_tools
        self.max_iterations = max_iterations
        self.completion_check = completion_check
        self.completion_check_min_tools = (
            completion_check_min_tools
            if completion_check_min_tools is not None
            else _env_int("REACT_COMPLETION_CHECK_MIN_TOOLS", DEFAULT_COMPLETION_CHECK_MIN_TOOLS)
        )
        self.cycle_detection_threshold = (
            cycle_detection_threshold
            if cycle_detection_threshold is not None
            else _env_int("REACT_CYCLE_DETECTION_THRESHOLD", DEFAULT_CYCLE_DETECTION_THRESHOLD)
        )
        self.self_reflection_interval = self_reflection_interval
        self.tool_selection_threshold = tool_selection_threshold
        self.tool_selection_max = tool_selection_max
        self.token_budget = token_budget
        self.context_guard = context_guard
        self.follow_ups = follow_ups
        # JSON-mode calls get synthetic ids; agents running side by side (plan steps sharing one set of
        # hooks) need distinct ones, since guard-rail state is keyed by tool_call_id.
        self.tool_call_id_prefix = tool_call_id_prefix
        self._runner = ToolRunner(
            hooks,
            tool_timeout=tool_timeout,
            batch_timeout=batch_timeout,
            # An endpoint without parallel tool calls may still return several: they run one after another.
            max_parallel=max_parallel_tools if declared(llm, PARALLEL_TOOL_CALLS) else 1,
            ledger=ledger,
        )
        self._checkpoint_cb: CheckpointCallback | None = None
        self._task: asyncio.Task[Any] | None = None
        self._cancel_requested = False

    @property
    def llm(self) -> LLM:
        return self._llm

    @property
    def tools(self) -> ToolRegistry:
        return self._tools

    @property
    def _native_mode_active(self) -> bool:
        """Native function calling needs both ``use_native_tools`` and a model that can call tools."""
        return self.use_native_tools and has(self._llm, FUNCTION_CALLING)

    # -- running -------------------------------------------------------------------------------

    def cancel(self) -> None:
        """Stop the active ``run()`` or ``stream_answer()`` at its next await; it then returns normally
        with a cancelled outcome (``done`` event with ``cancelled: true``). Called while the agent is
        idle, it stops the next ``run()``/``stream_answer()`` as soon as it starts."""
        self._cancel_requested = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()

    def _enter(self) -> asyncio.Task[Any] | None:
        if self._task is not None:
            raise RuntimeError("this agent is already running; create one agent per concurrent run")
        task = asyncio.current_task()
        self._task = task
        return task

    def _leave(self) -> None:
        self._task = None
        self._cancel_requested = False
        self._checkpoint_cb = None

    def _absorb_cancel(self, task: asyncio.Task[Any] | None) -> bool:
        """While a CancelledError is handled: True (and the cancellation undone) when it came from
        :meth:`cancel` alone; False when the task itself was cancelled, which must propagate."""
        requested = self._cancel_requested
        self._leave()
        return requested and task is not None and task.uncancel() == 0

    async def run(
        self,
        query: str,
        *,
        history: Sequence[Message] | None = None,
        on_event: EventCallback | None = None,
        metadata: RunContext | Mapping[str, Any] | None = None,
        resume_from: Mapping[str, Any] | None = None,
        checkpoint: CheckpointCallback | None = None,
        language: str | None = None,
        attachments: Sequence[Mapping[str, Any]] = (),
    ) -> AgentResult:
        """Run the tool loop for ``query`` after ``history`` (earlier messages of the conversation,
        without a system prompt).

        ``attachments`` are content parts the user sent with the question (the text of a document, an
        image's reference: see :mod:`agents.engine.attachments`): the question's message carries them
        after its text, and the synthesis of the answer reads them too.

        ``language`` is the user's interface language (a code such as ``zh-hans``): the run's stop and
        fallback messages are written in it (``None``: in the question's language).

        ``metadata`` (org_id, run_id, user...) reaches every hook. Never raises for LLM or tool
        failures: they end the run with a summarising answer and a ``stop_reason``. Emits ``step``,
        ``phase``, ``compact`` and ``inject`` events; ``done`` comes from :meth:`stream_answer` (or from
        here for a cancelled run).

        ``checkpoint`` is awaited with each checkpoint of the run (see the module docstring);
        ``resume_from`` is the run's checkpoint (its checkpoints folded by
        :func:`~agents.engine.durable.checkpoint.checkpoints_fold`) to continue from: ``query`` and ``history``
        are then ignored, and a run that had its answer goes straight to :meth:`stream_answer`. A parked
        run returns ``stop_reason="parked"`` (no ``done``) after a last checkpoint.
        """
        task = self._enter()
        meta = RunContext.of(metadata)
        emit = Emitter(on_event)
        self._checkpoint_cb = checkpoint
        try:
            if resume_from is not None:
                run = RunState.restore(resume_from, meta, emit, self._tools, language=language)
            else:
                run = RunState(query, meta, emit, self._tools, language=language)
        except Exception:
            self._leave()
            raise
        try:
            if not self._cancel_requested:  # cancel() may have come before the start
                if resume_from is not None:
                    return await self._resume(run)
                return await self._run(run, history or (), attachments)
        except asyncio.CancelledError:
            if not self._absorb_cancel(task):
                await run.emit.close_open(CLOSED_CANCELLED)
                raise
        except Exception as exc:
            await run.emit.close_open(type(exc).__name__)  # whoever reports the failure sends done
            raise
        finally:
            self._leave()
        logger.info("run cancelled after %d iterations", run.iteration)
        result = run.result("", StopReason.CANCELLED, cancelled=True)
        await run.emit.close_open(CLOSED_CANCELLED)
        await run.emit(_cancelled_done(result))
        return result

    async def answer(self, result: AgentResult, *, on_event: EventCallback | None = None) -> Answered:
        """Stream the user-facing answer synthesised from the whole trace, then emit ``done``; what it came
        to.

        Emits ``answer`` start, deltas and done. On ANY failure (or an empty stream) the answer is
        ``result.answer``: sent as one delta when nothing was streamed yet, and always as the ``content``
        of ``answer`` done with ``fallback: true``; when a budget refused the synthesis the run stops there
        as in the tool loop (``budget_exceeded``, the answer naming the budget first). For a cancelled
        result nothing is emitted. A :meth:`cancel` during the stream ends it with the part streamed so far
        and a cancelled ``done``.
        """
        task = self._enter()
        emit = Emitter(on_event)
        try:
            if not self._cancel_requested:  # cancel() may have come before the start
                return await _stream_answer(self._llm, result, emit, lambda: self._absorb_cancel(task))
        finally:
            self._leave()
        await emit(_cancelled_done(result))
        return Answered("", StopReason.CANCELLED, cancelled=True)

    async def stream_answer(self, result: AgentResult, *, on_event: EventCallback | None = None) -> str:
        """The text of :meth:`answer`."""
        return (await self.answer(result, on_event=on_event)).text

    async def _run(
        self, run: RunState, history: Sequence[Message], attachments: Sequence[Mapping[str, Any]] = ()
    ) -> AgentResult:
        if len(self._tools) > self.tool_selection_threshold:
            if run.emit.active:
                await run.emit(events.selecting_tools(len(self._tools)))
            run.registry, usage = await select_tools(
                self._llm, self._tools, run.query, max_tools=self.tool_selection_max
            )
            run.selected = run.registry.names()
            run.usage.add(usage)
        extra: list[str] = []
        if self.hooks is not None:
            extra = await self.hooks.run_session_start(SessionContext(run.query, run.metadata.as_metadata()))
        native = self._native_mode_active
        system = prompts.system_prompt(
            self.system_prompt,
            native=native,
            tools_text="" if native else run.registry.json_mode_descriptions(),
            extra=extra,
            parallel=declared(self._llm, PARALLEL_TOOL_CALLS),
        )
        run.transcript = Transcript(
            [
                {"role": "system", "content": system},
                *history,
                {"role": "user", "content": question_content(run.query, attachments), "_query": True},
            ]
        )
        return await self._drive(run, native)

    async def _drive(self, run: RunState, native: bool) -> AgentResult:
        try:
            return await self._loop(run, self._mode(run, native))
        except LLMFailed as exc:
            if isinstance(exc.cause, BudgetExceededError):
                budget = exc.cause.refusal.label_for(run.query, run.language)
                return await self._fallback(run, StopReason.BUDGET_EXCEEDED, budget=budget)
            logger.warning(
                "run ended by an LLM error after %d iterations: %s", run.iteration, type(exc.cause).__name__
            )
            return await self._fallback(
                run, StopReason.LLM_ERROR, error=exc.label_for(run.query, run.language)
            )

    def _mode(self, run: RunState, native: bool) -> _Mode:
        abilities = RunAbilities(self._llm)
        request: Mapping[str, Any] = {}
        if native:
            schemas = run.registry.openai_schemas() or None

            def native_request() -> Mapping[str, Any]:
                nonlocal request
                if abilities.current():
                    request = {"tools": schemas, **(abilities.tool_request_options() if schemas else {})}
                return request

            return _Mode(native_request, self._native_turn)

        def json_request() -> Mapping[str, Any]:
            # JSON mode while the endpoint takes it; after a refusal, plain text (the same action parsing).
            nonlocal request
            if abilities.current():
                json_mode = abilities.has(JSON_MODE)
                request = {"response_format": {"type": "json_object"} if json_mode else None}
            return request

        return _Mode(json_request, self._json_turn)

    async def _loop(self, run: RunState, mode: _Mode) -> AgentResult:
        """Ask the model, act on its reply, repeat: until a final result, a park or the budget's end."""
        while run.iteration < self.max_iterations:
            if self._over_budget(run):
                return await self._fallback(run, StopReason.TOKEN_BUDGET, token_budget=self.token_budget)
            run.iteration += 1
            response = await ask(self._llm, run, self.context_guard, **mode.request())
            outcome = await mode.turn(run, response)
            self._log_turn(run)
            match outcome:
                case Final(result=result):
                    return result
                case TurnParked(park=park):
                    return await self._park(run, park)
                case Continue():
                    await self._checkpoint(run)
        return await self._fallback(run, StopReason.MAX_ITERATIONS, max_iterations=self.max_iterations)

    async def _tool_turn(
        self, run: RunState, calls: list[ToolCall], *, native: bool, replay: bool = False
    ) -> Continue | TurnParked:
        """Run one reply's calls and append their results: pending (and checkpointed) until they are in."""
        if not replay:
            run.tools_pending(calls)
            await self._checkpoint(run)
        records = await self._run_tools(run, calls, replay=replay)
        if isinstance(records, Park):
            return TurnParked(records)  # the calls stay pending: the run goes on from them later
        if native:
            for record in records:  # every tool result right after its assistant message
                run.transcript.append(
                    {"role": "tool", "tool_call_id": record.tool_call_id, "content": record.observation}
                )
        else:
            (record,) = records
            observation = prompts.JSON_OBSERVATION.format(tool=record.name, observation=record.observation)
            run.transcript.append(note(observation))
        self._after_tools(run, calls)
        run.tools_done()
        return CONTINUE

    async def _native_turn(self, run: RunState, response: ChatResponse) -> TurnOutcome:
        response = await tool_calls_in_text(self._llm, run, response)
        if response.tool_calls and self.tool_call_id_prefix:
            # Models number their calls per conversation ("call_1"...): agents that share hooks (the steps
            # of a plan) make them unique, in the history too, so the provider still sees matching pairs.
            response = replace(
                response,
                tool_calls=tuple(
                    ToolCallRequest(f"{self.tool_call_id_prefix}{c.id}", c.name, c.arguments)
                    for c in response.tool_calls
                ),
            )
        if response.tool_calls:
            if run.emit.active:
                await run.emit(
                    events.thinking_done(run.iteration, response.content or response.reasoning_content or "")
                )
            run.transcript.append(response.assistant_message())
            calls = [native_tool_call(c) for c in response.tool_calls]
            outcome = await self._tool_turn(run, calls, native=True)
            if isinstance(outcome, TurnParked):
                return outcome
            run.empty_replies = 0
            await drain_follow_ups(run, self.follow_ups)
            return CONTINUE
        if run.emit.active:
            await run.emit(events.thinking_done(run.iteration, response.reasoning_content or ""))
        content = response.content or ""
        if not content.strip():
            run.empty_replies += 1
            if run.empty_replies >= 2:
                return Final(await self._fallback(run, StopReason.EMPTY_RESPONSE))
            run.transcript.append(note(prompts.EMPTY_REPLY_NUDGE))
            await drain_follow_ups(run, self.follow_ups)
            return CONTINUE
        run.empty_replies = 0
        run.transcript.append({"role": "assistant", "content": content})
        return await self._final_answer(
            run, content, followed_up=await drain_follow_ups(run, self.follow_ups)
        )

    async def _json_turn(self, run: RunState, response: ChatResponse) -> TurnOutcome:
        content = response.content or ""
        action = parse_action(content, response.reasoning_content)
        if run.emit.active:
            reasoning = (response.reasoning_content or "") if action.parse_failed else action.reasoning
            await run.emit(events.thinking_done(run.iteration, reasoning))
        if content:
            run.transcript.append({"role": "assistant", "content": content})
        # JSON mode has no tool-message pairing: follow-ups are taken right after the assistant message.
        followed_up = await drain_follow_ups(run, self.follow_ups)
        if action.parse_failed:
            run.parse_failures += 1
            if run.parse_failures >= 2 and not followed_up:
                if not content.strip():
                    return Final(await self._fallback(run, StopReason.UNPARSED_OUTPUT))
                return Final(await self._finish(run, content, StopReason.UNPARSED_OUTPUT))
            request = prompts.REFORMAT_REQUEST
            if action.problem:  # strict JSON refused it: say what, so the model can fix exactly that
                request = f"{request}\nProblem: {action.problem}"
            run.transcript.append(note(request))
            return CONTINUE
        run.parse_failures = 0
        if action.kind == TOOL_CALL:
            call = json_tool_call(action, f"{self.tool_call_id_prefix}json_call_{run.iteration}")
            return await self._tool_turn(run, [call], native=False)
        return await self._final_answer(run, action.answer, followed_up=followed_up)

    # -- steps shared by both modes ------------------------------------------------------------

    async def _run_tools(
        self, run: RunState, calls: list[ToolCall], *, replay: bool = False
    ) -> list[ToolCallRecord] | Park:
        started = time.perf_counter()
        records = await self._runner.run(
            calls,
            run.registry,
            iteration=run.iteration,
            metadata=run.metadata,
            emit=run.emit,
            replay=replay,
            announced=run.announced,
        )
        run.turn_tools = time.perf_counter() - started
        if not isinstance(records, Park):
            run.records.extend(records)
        return records

    async def _final_answer(self, run: RunState, answer: str, *, followed_up: bool) -> TurnOutcome:
        if followed_up:
            return CONTINUE  # the user added something: the answer must take it into account
        if completion_check_due(
            run, enabled=self.completion_check, min_tools=self.completion_check_min_tools
        ):
            return CONTINUE
        return Final(await self._finish(run, answer))

    def _after_tools(self, run: RunState, calls: list[ToolCall]) -> None:
        after_tool_calls(
            run,
            calls,
            cycle_threshold=self.cycle_detection_threshold,
            reflection_interval=self.self_reflection_interval,
        )

    def _over_budget(self, run: RunState) -> bool:
        return self.token_budget is not None and run.usage.total_tokens >= self.token_budget

    async def _finish(
        self, run: RunState, answer: str, stop_reason: StopReason = StopReason.FINAL_ANSWER
    ) -> AgentResult:
        if run.emit.active:
            await run.emit.close_open(stop_reason)  # none is open on a healthy path: a safety net
            await run.emit(events.answer_signal())
        run.finished(answer, stop_reason)
        await self._checkpoint(run)
        return run.result(answer, stop_reason)

    async def _fallback(self, run: RunState, reason: StopReason, **details: Any) -> AgentResult:
        logger.info("run stopped: %s after %d iterations", reason, run.iteration)
        answer = prompts.fallback_answer(
            reason, run.records, query=run.query, language=run.language, **details
        )
        return await self._finish(run, answer, reason)

    def _log_turn(self, run: RunState) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        logger.info(
            "turn %d: compaction %.1f ms, llm %.1f ms, tools %.1f ms",
            run.iteration,
            run.turn_compaction * 1000,
            run.turn_llm * 1000,
            run.turn_tools * 1000,
            extra={"run_id": run.metadata.run_id, "org_id": run.metadata.org_id},
        )
        run.turn_compaction = run.turn_llm = run.turn_tools = 0.0


__all__ = ["AgentResult", "ReActAgent"]
