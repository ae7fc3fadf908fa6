"""Plan-mode answers: the draft answer of a run, re-planning context, and the streamed final answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agents.engine import events
from agents.engine.llm import LLM, Message
from agents.engine.plan import prompts
from agents.engine.plan.models import DONE, FAILED, Analysis, Plan, PlanResult
from agents.engine.prompts import SYNTHESIS_SYSTEM, is_chinese
from agents.engine.stop_reasons import StopReason
from agents.engine.synthesis import Answered, cut, stream_run_answer

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
) -> Answered:
    """Stream the synthesised answer as ``answer`` events, then emit ``done`` (as ReAct's stream_answer).

    On any failure or an empty stream the answer is ``result.answer`` (the analyser's final answer, else
    the finished steps' results), sent as one delta when nothing was streamed and marked ``fallback``.
    ``absorb_cancel()`` is asked when the stream is cancelled: True stops with a cancelled ``done``.
    """
    return await stream_run_answer(
        llm,
        result,
        result.goal,
        lambda: synthesis_messages(result),
        emit,
        absorb_cancel,
        ask_model=result.stop_reason != StopReason.BUDGET_EXCEEDED,  # past a budget: no further call
    )


__all__ = ["draft_answer", "joined_results", "replan_context", "stream_plan_answer", "synthesis_messages"]
