"""The value types of plan mode: steps, plans, the analyser's verdict and the result of a plan run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agents.engine.llm import Usage
from agents.engine.stop_reasons import StopReason
from agents.engine.tools import ToolCallRecord
from agents.engine.verdicts import Park

PENDING = "pending"
RUNNING = "running"
DONE = "done"
FAILED = "failed"
SKIPPED = "skipped"
CANCELLED = "cancelled"
TERMINAL = frozenset({DONE, FAILED, SKIPPED, CANCELLED})


class PlanValidationError(Exception):
    """The planner's output cannot be run (a dependency cycle, too many steps, no step at all)."""


@dataclass(slots=True)
class PlanStep:
    """One task of a plan and, once executed, how it went.

    ``status`` is ``pending``, ``running``, ``done``, ``failed``, ``skipped`` or ``cancelled``; ``result`` is
    the step agent's answer (for a failed step, whatever partial answer it gave); ``started_at`` and
    ``finished_at`` are ``time.monotonic()`` values (restored steps: 0 and the elapsed seconds).
    """

    id: str
    task: str
    dependencies: list[str] = field(default_factory=list)
    tool_hint: str | None = None
    model_hint: str | None = None
    status: str = PENDING
    result: str = ""
    error: str | None = None
    started_at: float | None = None
    finished_at: float | None = None
    iterations: int = 0
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    # Durable runs: the step agent's checkpoint while the step has not finished (it resumes from it).
    checkpoint: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def elapsed(self) -> float | None:
        """Seconds the step ran, when it ran."""
        if self.started_at is None or self.finished_at is None:
            return None
        return round(self.finished_at - self.started_at, 4)

    def describe(self) -> dict[str, Any]:
        """The step as it appears in the ``plan`` dag event."""
        return {
            "id": self.id,
            "task": self.task,
            "dependencies": list(self.dependencies),
            "tool_hint": self.tool_hint,
            "model_hint": self.model_hint,
            "status": self.status,
        }


@dataclass(slots=True)
class Plan:
    """A goal, its steps (an acyclic graph through ``dependencies``) and the re-planning round it belongs to (1-based)."""

    goal: str
    steps: list[PlanStep]
    round: int = 1

    def step(self, step_id: str) -> PlanStep:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    def describe(self) -> list[dict[str, Any]]:
        return [step.describe() for step in self.steps]

    @property
    def iterations(self) -> int:
        return sum(step.iterations for step in self.steps)


@dataclass(frozen=True, slots=True)
class Analysis:
    """The analyser's verdict on a round: was the goal reached, how sure, why, and its answer."""

    achieved: bool = False
    confidence: float = 0.0
    reasoning: str = ""
    final_answer: str = ""


@dataclass(frozen=True, slots=True)
class PlanResult:
    """The outcome of ``PlanAgent.run()``, shaped like ``AgentResult``.

    ``answer`` is the draft answer (the analyser's ``final_answer``, else the finished steps' results);
    ``iterations`` counts the tool-loop iterations of every step of every round; ``stop_reason`` is
    ``achieved``, ``confident``, ``max_rounds``, ``planning_failed``, ``cancelled`` or ``parked`` (a step's
    hook parked the run: ``park`` says why); ``plans`` holds
    each round's plan; ``goal`` is the goal with any follow-ups the user sent during the run;
    ``language`` is the user's interface language the run was given (``None``: the goal's).
    """

    answer: str
    iterations: int
    usage: Usage
    elapsed: float
    plans: tuple[Plan, ...] = ()
    analysis: Analysis | None = None
    cancelled: bool = False
    stop_reason: StopReason = StopReason.ACHIEVED
    goal: str = ""
    park: Park | None = None
    language: str | None = None

    @property
    def rounds(self) -> int:
        return len(self.plans)


_DIGITS = re.compile(r"(\d+)")


def id_order(step_id: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key putting ids in natural order ("2" before "10", "s2" before "s10")."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in _DIGITS.split(step_id) if part
    )


__all__ = [
    "CANCELLED",
    "DONE",
    "FAILED",
    "PENDING",
    "RUNNING",
    "SKIPPED",
    "TERMINAL",
    "Analysis",
    "Plan",
    "PlanResult",
    "PlanStep",
    "PlanValidationError",
    "id_order",
]
