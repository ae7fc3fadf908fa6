"""What a run's task comes to, for the run manager to record: it ended (done, cancelled or failed,
with the figures :func:`agents.runs.lifecycle.run_finish` records) or it parked on an approval."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agents.models import RunStatus


@dataclass(frozen=True, slots=True)
class Ended:
    """The run ended: ``status`` is done, cancelled or failed."""

    status: str
    elapsed: float = 0.0
    stop_reason: str = ""
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
            "stop_reason": self.stop_reason,
            "error": self.error,
            "summary": self.summary,
        }


@dataclass(frozen=True, slots=True)
class Parked:
    """The run waits for the decision on ``approval_id``; a worker resumes it then."""

    approval_id: Any


RunOutcome = Ended | Parked

NOT_STARTED = Ended(status=RunStatus.FAILED, error="the run did not start")
