"""Plan-mode answers: the draft answer of a run, re-planning context, and the streamed final answer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence

from agents.engine import events
from agents.engine import plan_prompts as prompts
from agents.engine.llm import LLM, Message, Usage
from agents.engine.plan_models import DONE, FAILED, Analysis, Plan, PlanResult
from agents.engine.prompts import SYNTHESIS_SYSTEM, is_chinese
from agents.engine.synthesis import cut

logger = logging.getLogger(__name__)

SYNTHESIS_STEP_CHARS = 4000
REPLAN_STEP_CHARS = 500


def joined_results(plans: Sequence[Plan], goal: str) -> str:
    """The finished steps' results, in order, each under its task (the last-resort answer)."""
    blocks = [
        f"**{step.task}**\n\n{step.result.strip()}"
        for plan in plans
        for step in plan.steps
        if step.status == DONE and step.result.strip()
    ]
    if blocks:
        return "\n\n".join(blocks)
    return prompts.NOTHING_DONE[1 if is_chinese(goal) else 0]


def draft_answer(plans: Sequence[Plan], analysis: Analysis | None, goal: str) -> str:
    """The analyser's final answer, else the finished steps' results joined."""
    if analysis is not None and analysis.final_answer.strip():
        return analysis.final_answer
    return joined_results(plans, goal)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def replan_context(plans: Sequence[Plan], analyses: Mapping[int, Analysis]) -> str:
    """What the planner learns from earlier rounds: each round's verdict and each step in at most 500
    characters (status, task, result or error)."""
    blocks = []
    for plan in plans:
        lines = [prompts.REPLAN_ROUND.format(round=plan.round)]
        analysis = analyses.get(plan.round)
        if analysis is not None:
            lines.append(
                prompts.REPLAN_ANALYSIS.format(
                    achieved=analysis.achieved,
                    confidence=analysis.confidence,
                    reasoning=_one_line(analysis.reasoning, 1000),
                )
            )
        for step in plan.steps:
            outcome = step.result if step.status == DONE else (step.error or step.status)
            line = prompts.REPLAN_STEP.format(
                step_id=step.id, status=step.status, task=step.task, outcome=outcome or "(no result)"
            )
            lines.append(_one_line(line, REPLAN_STEP_CHARS))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks + [prompts.REPLAN_CLOSING])


def synthesis_messages(result: PlanResult) -> list[Message]:
    """The synthesiser's prompt: the goal, every finished or failed step of every round, the draft."""
    blocks = []
    for plan in result.plans:
        for step in plan.steps:
            if step.status == DONE:
                blocks.append(
                    prompts.SYNTHESIS_STEP.format(
                        task=step.task, result=cut(step.result, SYNTHESIS_STEP_CHARS)
                    )
                )
            elif step.status == FAILED:
                blocks.append(prompts.SYNTHESIS_FAILED_STEP.format(task=step.task, error=step.error))
    user = prompts.SYNTHESIS_USER.format(
        goal=result.goal, steps="\n\n".join(blocks) or "(none)", draft=result.answer
    )
    return [{"role": "system", "content": SYNTHESIS_SYSTEM}, {"role": "user", "content": user}]


async def stream_plan_answer(
    llm: LLM, result: PlanResult, emit: events.Emitter, absorb_cancel: Callable[[], bool]
) -> str:
    """Stream the synthesised answer as ``answer`` events, then emit ``done`` (as ReAct's stream_answer).

    On any failure or an empty stream the answer is ``result.answer`` (the analyser's final answer, else
    the finished steps' results), sent as one delta when nothing was streamed and marked ``fallback``.
    ``absorb_cancel()`` is asked when the stream is cancelled: True stops with a cancelled ``done``.
    """
    if result.cancelled:
        return result.answer
    started = time.perf_counter()
    usage = Usage()
    usage.add(result.usage)
    await emit(events.answer_start())
    parts: list[str] = []
    failed = cancelled = False
    try:
        stream = llm.stream_chat(synthesis_messages(result), usage=usage)
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
    except Exception as exc:  # any failure falls back to the draft answer
        logger.warning("plan answer synthesis failed (%s); using the draft answer", type(exc).__name__)
        failed = True
    answer = "".join(parts)
    fallback = not cancelled and (failed or not answer.strip())
    if fallback:
        answer = result.answer
        if not parts and answer:
            await emit(events.answer_delta(answer))
    await emit(events.answer_done(answer, fallback=fallback))
    await emit(
        events.done(
            answer,
            result.iterations,
            usage.as_dict(),
            round(result.elapsed + time.perf_counter() - started, 4),
            cancelled=cancelled,
            stop_reason="cancelled" if cancelled else result.stop_reason,
        )
    )
    return answer


__all__ = ["draft_answer", "joined_results", "replan_context", "stream_plan_answer", "synthesis_messages"]
