"""Answer synthesis: one streamed LLM call that turns the run's trace into the user-facing answer.

:func:`stream_synthesis` is the streaming itself, shared by ReAct (:func:`stream_answer`) and plan mode
(:func:`agents.engine.plan.synthesis.stream_plan_answer`); each builds its own prompt. What it comes to is an
:class:`Answered`: a budget that refuses the synthesis ends the run as it ends the tool loop
(``budget_exceeded``, the answer saying which budget first, in the question's language).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agents.engine import events
from agents.engine.attachments import question_attachments
from agents.engine.llm import LLM, Message, Usage
from agents.engine.metering import BudgetExceededError, BudgetRefusal, CallPurpose, call_purpose
from agents.engine.prompts import SYNTHESIS_SYSTEM, stopped_by_budget
from agents.engine.stop_reasons import StopReason

if TYPE_CHECKING:
    from agents.engine.run_state import AgentResult

logger = logging.getLogger(__name__)

TRACE_RESULT_CHARS = 2000


def cut(text: str, limit: int = TRACE_RESULT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [cut: {len(text) - limit} more characters]"


def format_trace(messages: Sequence[Message], query: str = "") -> str:
    """The run as readable text for the synthesiser.

    Every message but the loop's system prompt and the run's question (marked ``_query``): tool calls
    with their arguments, results, JSON-mode observations and compaction summaries, each cut to 2,000
    characters.
    """
    names: dict[str, str] = {}
    lines: list[str] = []
    for index, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
        if role == "system":
            if message.get("_summary"):
                lines.append(f"[summary of earlier work]\n{cut(text)}")
            elif index > 0:  # index 0 is the tool loop's own instructions
                lines.append(f"[note]\n{cut(text)}")
        elif role == "user":
            if message.get("_summary"):
                lines.append(f"[summary of earlier work]\n{cut(text)}")
            # The question is given apart (with its attachments, when it has some).
            elif not (message.get("_query") and (text == query or isinstance(content, list))):
                lines.append(f"[user]\n{cut(text)}")
        elif role == "assistant":
            if text:
                lines.append(f"[assistant]\n{cut(text)}")
            for call in message.get("tool_calls") or ():
                function = call.get("function", {})
                names[call.get("id", "")] = function.get("name", "?")
                lines.append(f"[tool call] {function.get('name', '?')}({cut(function.get('arguments', ''))})")
        elif role == "tool":
            name = names.get(message.get("tool_call_id", ""), "tool")
            lines.append(f"[tool result: {name}]\n{cut(text)}")
    return "\n\n".join(lines) if lines else "(no tool was used)"


def synthesis_messages(result: AgentResult) -> list[Message]:
    """The synthesiser's prompt: its system prompt, then the question, the trace and the draft answer."""
    user = (
        f"Question:\n{result.query}\n\n"
        f"Execution trace:\n{format_trace(result.messages, result.query)}\n\n"
        f"Draft answer from the agent (may be terse or incomplete):\n{result.answer}\n\n"
        "Write the final answer to the question."
    )
    attached = question_attachments(result.messages)
    content: str | list[Any] = user
    if attached:
        content = [
            {"type": "text", "text": user},
            {"type": "text", "text": "Attached to the question:"},
            *attached,
        ]
    return [{"role": "system", "content": SYNTHESIS_SYSTEM}, {"role": "user", "content": content}]


async def stream_answer(
    llm: LLM, result: AgentResult, emit: events.Emitter, absorb_cancel: Callable[[], bool]
) -> Answered:
    """Stream the synthesised answer as ``answer`` events, then emit ``done``; see ReActAgent.answer.

    ``absorb_cancel()`` is asked when the stream is cancelled: True means "stop and report cancelled",
    False lets the cancellation propagate.
    """
    return await stream_run_answer(
        llm,
        result,
        result.query,
        lambda: synthesis_messages(result),
        emit,
        absorb_cancel,
        # the model just failed: do not wait on it again; past a budget: no further call
        ask_model=result.stop_reason not in (StopReason.LLM_ERROR, StopReason.BUDGET_EXCEEDED),
        fallback_note="falling back to the loop's answer",
    )


@dataclass(frozen=True, slots=True)
class Answered:
    """What a run's answer came to: ``text`` (what the user got and ``done`` carries), why the run stopped
    (``stop_reason``: the run's own, ``budget_exceeded`` when a budget refused the synthesis, ``cancelled``
    when the stream was), and whether ``text`` is the draft answer (``fallback``)."""

    text: str
    stop_reason: StopReason
    fallback: bool = False
    cancelled: bool = False
    type: Literal["answered"] = "answered"


@dataclass(frozen=True, slots=True)
class Draft:
    """What a run has before its answer is synthesised: the draft answer (the fallback), the figures its
    ``done`` event reports, the question, and the user's interface language (the language of a stop
    message: ``None``, the question's)."""

    answer: str
    usage: Usage
    iterations: int
    elapsed: float
    stop_reason: StopReason
    query: str = ""
    language: str | None = None


class RunOutcome(Protocol):
    """What :func:`stream_run_answer` reads of a run's result (ReAct's or plan mode's)."""

    @property
    def cancelled(self) -> bool: ...
    @property
    def answer(self) -> str: ...
    @property
    def usage(self) -> Usage: ...
    @property
    def iterations(self) -> int: ...
    @property
    def elapsed(self) -> float: ...
    @property
    def stop_reason(self) -> StopReason: ...
    @property
    def language(self) -> str | None: ...


async def stream_run_answer(
    llm: LLM,
    result: RunOutcome,
    query: str,
    messages: Callable[[], list[Message]],
    emit: events.Emitter,
    absorb_cancel: Callable[[], bool],
    *,
    ask_model: bool = True,
    fallback_note: str = "using the draft answer",
) -> Answered:
    """:func:`stream_synthesis` of the answer of a run that answered ``query``, its result the draft; a
    cancelled run's answer is its result's, and nothing is streamed."""
    if result.cancelled:
        return Answered(result.answer, result.stop_reason, cancelled=True)
    draft = Draft(
        result.answer,
        result.usage,
        result.iterations,
        result.elapsed,
        result.stop_reason,
        query,
        result.language,
    )
    return await stream_synthesis(
        llm, messages, draft, emit, absorb_cancel, ask_model=ask_model, fallback_note=fallback_note
    )


async def stream_synthesis(
    llm: LLM,
    messages: Callable[[], list[Message]],
    draft: Draft,
    emit: events.Emitter,
    absorb_cancel: Callable[[], bool],
    *,
    ask_model: bool = True,
    fallback_note: str = "using the draft answer",
) -> Answered:
    """Stream the answer the model writes from ``messages()`` as ``answer`` events, then emit ``done``
    (ReAct's and plan mode's synthesis alike).

    On any failure of the model, or an empty stream, or without ``ask_model``, the answer is
    ``draft.answer``, sent as one delta when nothing was streamed and marked ``fallback``. A budget that
    refuses the call stops the run there, as in the tool loop: ``budget_exceeded``, and the answer says
    which budget before the draft. ``absorb_cancel()`` is asked when the stream is cancelled: True stops
    with a cancelled ``done``, False lets the cancellation propagate.
    """
    started = time.perf_counter()
    usage = Usage()
    usage.add(draft.usage)
    await emit(events.answer_start())
    parts: list[str] = []
    failed = not ask_model
    cancelled = False
    refusal: BudgetRefusal | None = None
    if not failed:
        try:
            with call_purpose(CallPurpose.SYNTHESIS):
                stream = llm.stream_chat(messages(), usage=usage)
            try:
                async for delta in stream:
                    if delta:
                        parts.append(delta)
                        await emit(events.answer_delta(delta))
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
        except asyncio.CancelledError:
            if not absorb_cancel():
                raise
            cancelled = True
        except BudgetExceededError as exc:  # the call was not made: the run stops at the budget
            logger.info("answer synthesis refused by a budget; the run stops there")
            refusal, failed = exc.refusal, True
        except Exception as exc:  # any failure falls back to the draft answer
            logger.warning("answer synthesis failed (%s); %s", type(exc).__name__, fallback_note)
            failed = True
    answer = "".join(parts)
    stop_reason = StopReason.CANCELLED if cancelled else draft.stop_reason
    fallback = not cancelled and (failed or not answer.strip())
    if fallback:
        answer = draft.answer
        if refusal is not None:
            stop_reason = StopReason.BUDGET_EXCEEDED
            answer = stopped_by_budget(
                answer,
                query=draft.query,
                language=draft.language,
                budget=refusal.label_for(draft.query, draft.language),
            )
        if not parts and answer:
            await emit(events.answer_delta(answer))
    await emit(events.answer_done(answer, fallback=fallback))
    await emit(
        events.done(
            answer,
            draft.iterations,
            usage.as_dict(),
            round(draft.elapsed + time.perf_counter() - started, 4),
            cancelled=cancelled,
            stop_reason=stop_reason,
        )
    )
    return Answered(answer, stop_reason, fallback=fallback, cancelled=cancelled)
