"""Checkpoints of plan-mode runs: the plans of every round with their steps' states, the analyses, and,
for a step still running, its own ReAct checkpoint (so it resumes where it was, not from scratch).

A plan run reports each checkpoint whole (``reset``, no separate messages): plan runs are short (a few
rounds of a few steps) and a step's history lives inside its step. ``kind`` is ``"plan"``, so a host
knows to resume the run with a :class:`~agents.engine.plan.agent.PlanAgent`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agents.engine.durable.checkpoint import record_from_dict, record_to_dict
from agents.engine.llm import Usage
from agents.engine.plan.models import PENDING, RUNNING, Analysis, Plan, PlanStep

PLAN_CHECKPOINT_VERSION = 1
PLAN_KIND = "plan"


def usage_to_dict(usage: Usage) -> dict[str, int]:
    return usage.as_dict()


def usage_from_dict(data: Mapping[str, Any] | None) -> Usage:
    return Usage.from_dict(data)


def _step_state(state: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if state is None:
        return None
    # Lists copied: the step goes on appending to its own while this copy is written elsewhere.
    return {
        **state,
        "messages": list(state.get("messages") or ()),
        "records": list(state.get("records") or ()),
    }


def step_to_dict(step: PlanStep) -> dict[str, Any]:
    return {
        "id": step.id,
        "task": step.task,
        "dependencies": list(step.dependencies),
        "tool_hint": step.tool_hint,
        "model_hint": step.model_hint,
        "status": step.status,
        "result": step.result,
        "error": step.error,
        "elapsed": step.elapsed,
        "iterations": step.iterations,
        "tool_calls": [record_to_dict(r) for r in step.tool_calls],
        "usage": usage_to_dict(step.usage),
        "checkpoint": _step_state(step.checkpoint),
    }


def step_from_dict(data: Mapping[str, Any]) -> PlanStep:
    """A step as it was; one that was running becomes pending again (with its checkpoint, if any)."""
    status = str(data.get("status") or PENDING)
    elapsed = data.get("elapsed")
    step = PlanStep(
        id=str(data["id"]),
        task=str(data.get("task") or ""),
        dependencies=[str(d) for d in data.get("dependencies") or ()],
        tool_hint=data.get("tool_hint"),
        model_hint=data.get("model_hint"),
        status=PENDING if status == RUNNING else status,
        result=str(data.get("result") or ""),
        error=data.get("error"),
        iterations=int(data.get("iterations") or 0),
        tool_calls=[record_from_dict(r) for r in data.get("tool_calls") or ()],
        usage=usage_from_dict(data.get("usage")),
    )
    if elapsed is not None and step.status != PENDING:
        step.started_at, step.finished_at = 0.0, float(elapsed)
    step.checkpoint = data.get("checkpoint") if step.status == PENDING else None
    return step


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    return {"goal": plan.goal, "round": plan.round, "steps": [step_to_dict(s) for s in plan.steps]}


def plan_from_dict(data: Mapping[str, Any]) -> Plan:
    return Plan(
        goal=str(data.get("goal") or ""),
        steps=[step_from_dict(s) for s in data.get("steps") or ()],
        round=int(data.get("round") or 1),
    )


def analysis_to_dict(analysis: Analysis | None) -> dict[str, Any] | None:
    if analysis is None:
        return None
    return {
        "achieved": analysis.achieved,
        "confidence": analysis.confidence,
        "reasoning": analysis.reasoning,
        "final_answer": analysis.final_answer,
    }


def analysis_from_dict(data: Mapping[str, Any] | None) -> Analysis | None:
    if data is None:
        return None
    return Analysis(
        achieved=bool(data.get("achieved")),
        confidence=float(data.get("confidence") or 0.0),
        reasoning=str(data.get("reasoning") or ""),
        final_answer=str(data.get("final_answer") or ""),
    )


__all__ = [
    "PLAN_KIND",
    "PLAN_CHECKPOINT_VERSION",
    "analysis_from_dict",
    "analysis_to_dict",
    "plan_from_dict",
    "plan_to_dict",
    "step_from_dict",
    "step_to_dict",
    "usage_from_dict",
]
