"""What a run's task comes to, for the run manager to record: ``Done | Cancelled | Failed | Interrupted |
Parked``.

:class:`Done`, :class:`Cancelled` and :class:`Failed` end the run, with the figures
:func:`agents.runs.lifecycle.run_finish` records; :class:`Interrupted` means the run's lease was taken
from this process (the sweeper declared it interrupted), so nothing more is recorded here: whoever
resumes it records its end; :class:`Parked` means it waits for an approval's decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from agents.engine.stop_reasons import StopReason
from agents.models import RunStatus


@dataclass(frozen=True, slots=True)
class _Ended:
    """A run that ended; ``status`` is the :class:`~agents.models.RunStatus` it ends in."""

    status: ClassVar[str]

    elapsed: float = 0.0
    stop_reason: StopReason | str = ""
    answer: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    iterations: int = 0
    error: str = ""
    summary: str | None = None

    def finish_fields(self) -> dict[str, Any]:
        """The keyword arguments of :func:`~agents.runs.lifecycle.run_finish` for this end."""
        return {
            "status": self.status,
            "answer": self.answer,
            "usage": self.usage,
            "iterations": self.iterations,
            "elapsed": self.elapsed,
            "stop_reason": str(self.stop_reason),
            "error": self.error,
            "summary": self.summary,
        }


@dataclass(frozen=True, slots=True)
class Done(_Ended):
    """The run answered."""

    status: ClassVar[str] = RunStatus.DONE


@dataclass(frozen=True, slots=True)
class Cancelled(_Ended):
    """The run was cancelled (before or while its engine ran)."""

    status: ClassVar[str] = RunStatus.CANCELLED
    stop_reason: StopReason | str = StopReason.CANCELLED


@dataclass(frozen=True, slots=True)
class Failed(_Ended):
    """The run failed outside the engine (which ends model and tool failures itself, as answers)."""

    status: ClassVar[str] = RunStatus.FAILED


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The run's lease was taken from this process; it records nothing more."""


@dataclass(frozen=True, slots=True)
class Parked:
    """The run waits for the decision on ``approval_id``; a worker resumes it then."""

    approval_id: Any


Ended = Done | Cancelled | Failed
RunOutcome = Done | Cancelled | Failed | Interrupted | Parked

NOT_STARTED = Failed(error="the run did not start")

__all__ = [
    "NOT_STARTED",
    "Cancelled",
    "Done",
    "Ended",
    "Failed",
    "Interrupted",
    "Parked",
    "RunOutcome",
]
