"""The state of one plan-mode run, and its checkpoints (durable runs: see ``plan.checkpoint``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from agents.engine.events import Emitter
from agents.engine.llm import Usage
from agents.engine.plan.checkpoint import (
    PLAN_CHECKPOINT_VERSION,
    PLAN_KIND,
    analysis_from_dict,
    analysis_to_dict,
    plan_from_dict,
    plan_to_dict,
    usage_from_dict,
)
from agents.engine.plan.models import Analysis, Plan, PlanResult
from agents.engine.plan.synthesis import draft_answer
from agents.engine.run_context import RunContext
from agents.engine.stop_reasons import StopReason
from agents.engine.verdicts import Park

# Where a plan run stands: making the plan of ``round``, executing its latest plan, or deciding after it.
PLANNING = "planning"
EXECUTING = "executing"
DECIDING = "deciding"
ANSWER = "answer"


class PlanRunState:
    """The mutable state of one ``PlanAgent.run()`` (see ``plan.checkpoint`` for its checkpoints)."""

    def __init__(
        self, goal: str, metadata: RunContext, emit: Emitter, *, language: str | None = None
    ) -> None:
        self.goal = goal
        self.language = language  # the user's interface language (stop messages); None: the goal's
        self.metadata = metadata
        self.emit = emit
        self.started = time.perf_counter()
        self.usage = Usage()
        self.plans: list[Plan] = []
        self.analyses: dict[int, Analysis] = {}
        self.analysis: Analysis | None = None
        self.stage = PLANNING
        self.round = 1
        self.spent = 0
        self.feedback: str | None = None
        self.followed_up = False
        self.final: str | None = None
        self.follow_ups_taken = 0
        self.seq = 0

    def full_checkpoint(self) -> dict[str, Any]:
        return {
            "v": PLAN_CHECKPOINT_VERSION,
            "kind": PLAN_KIND,
            "goal": self.goal,
            "usage": self.usage.as_dict(),
            "elapsed": round(time.perf_counter() - self.started, 4),
            "plans": [plan_to_dict(plan) for plan in self.plans],
            "analyses": {str(r): analysis_to_dict(a) for r, a in self.analyses.items()},
            "analysis": analysis_to_dict(self.analysis),
            "stage": self.stage,
            "round": self.round,
            "spent": self.spent,
            "feedback": self.feedback,
            "followed_up": self.followed_up,
            "final": self.final,
            "interrupts_taken": self.follow_ups_taken,
            "iteration": sum(plan.iterations for plan in self.plans),
        }

    @classmethod
    def restore(
        cls,
        checkpoint: Mapping[str, Any],
        metadata: RunContext,
        emit: Emitter,
        *,
        language: str | None = None,
    ) -> PlanRunState:
        if checkpoint.get("kind") != PLAN_KIND or checkpoint.get("v") != PLAN_CHECKPOINT_VERSION:
            raise ValueError("not a plan-mode checkpoint of a supported version")
        state = cls(str(checkpoint.get("goal") or ""), metadata, emit, language=language)
        state.started -= float(checkpoint.get("elapsed") or 0.0)
        state.usage = usage_from_dict(checkpoint.get("usage"))
        state.plans = [plan_from_dict(p) for p in checkpoint.get("plans") or ()]
        analyses = checkpoint.get("analyses") or {}
        state.analyses = {int(r): a for r, d in analyses.items() if (a := analysis_from_dict(d)) is not None}
        state.analysis = analysis_from_dict(checkpoint.get("analysis"))
        state.stage = str(checkpoint.get("stage") or PLANNING)
        state.round = int(checkpoint.get("round") or 1)
        state.spent = int(checkpoint.get("spent") or 0)
        state.feedback = checkpoint.get("feedback")
        state.followed_up = bool(checkpoint.get("followed_up"))
        state.final = checkpoint.get("final")
        state.follow_ups_taken = int(checkpoint.get("interrupts_taken") or 0)
        state.seq = int(checkpoint.get("seq") or 0)
        return state

    def result(
        self, stop_reason: StopReason, *, cancelled: bool = False, park: Park | None = None
    ) -> PlanResult:
        answer = "" if cancelled or park is not None else draft_answer(self.plans, self.analysis, self.goal)
        return PlanResult(
            answer=answer,
            iterations=sum(plan.iterations for plan in self.plans),
            usage=self.usage,
            elapsed=round(time.perf_counter() - self.started, 4),
            plans=tuple(self.plans),
            analysis=self.analysis,
            cancelled=cancelled,
            stop_reason=stop_reason,
            goal=self.goal,
            park=park,
            language=self.language,
        )
