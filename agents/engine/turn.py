"""What one turn of the ReAct loop comes to: :class:`Continue`, :class:`Final` or :class:`TurnParked`.

As openai-agents-python's next steps (``NextStepRunAgain``, ``NextStepFinalOutput``,
``NextStepInterruption``): https://openai.github.io/openai-agents-python/ref/run_internal/run_steps/
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.engine.run_state import AgentResult
from agents.engine.verdicts import Park


@dataclass(frozen=True, slots=True)
class Continue:
    """Go on: ask the model again."""


@dataclass(frozen=True, slots=True)
class Final:
    """The run has its result."""

    result: AgentResult


@dataclass(frozen=True, slots=True)
class TurnParked:
    """A hook parked the run (``park`` says why); it stops without a ``done`` and resumes later."""

    park: Park


#: The one :class:`Continue`.
CONTINUE = Continue()

TurnOutcome = Continue | Final | TurnParked

__all__ = ["CONTINUE", "Continue", "Final", "TurnParked", "TurnOutcome"]
