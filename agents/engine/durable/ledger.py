"""What a durable run needs from the engine's tool calls: a ledger of the calls made.

(Parking is a hook's verdict, :class:`~agents.engine.verdicts.Park`: the loop stops without a ``done``
event and returns a result with ``stop_reason`` :attr:`~agents.engine.outcomes.StopReason.PARKED`; the
turn's tool calls stay pending in the run's last checkpoint, so the run resumes exactly there.)

- :class:`ToolCallLedger`: where a run records each call it makes, under the idempotency key
  ``<run_id>:<tool_call_id>`` (:func:`~agents.engine.tool_context.idempotency_key`, which the call's
  :class:`~agents.engine.tool_context.ToolCallContext` carries to its hooks and its tool). A resumed run that replays a pending call gets the recorded outcome
  instead of running the tool again; a call that started but never recorded its end (the process died
  while it ran) is not repeated either: the model is told its outcome is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.engine.tool_context import idempotency_key
from agents.engine.tools import ToolResult

UNKNOWN_OUTCOME = (
    "the run was interrupted while this call was running, so its outcome is unknown. It was not "
    "repeated, to avoid doing it twice: check its effect before trying again."
)


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A call found in the ledger: finished (with what the model saw) or only started."""

    finished: bool
    observation: str = ""
    error: str | None = None
    outcome: str = "ok"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def as_result(self) -> ToolResult:
        """The result a replay reports in place of running the tool again."""
        if not self.finished:
            return ToolResult.failure(UNKNOWN_OUTCOME, content=f"Error: {UNKNOWN_OUTCOME}")
        return ToolResult(content=self.observation, is_error=self.error is not None, error=self.error)


class ToolCallLedger(Protocol):
    """Records the tool calls of durable runs (see the module docstring)."""

    async def recorded(self, keys: Sequence[str], *, iteration: int) -> Mapping[str, RecordedCall]:
        """The calls among ``keys`` that a previous attempt of the run started in ``iteration``."""
        ...

    async def begin(self, key: str, *, tool_name: str, args: Mapping[str, Any], iteration: int) -> None:
        """Record that the call is about to run. Must be durable before the tool runs; raising
        prevents the call."""
        ...

    async def finish(self, key: str, *, observation: str, error: str | None, outcome: str) -> None:
        """Record how the call ended (what the model saw)."""
        ...


__all__ = [
    "RecordedCall",
    "ToolCallLedger",
    "idempotency_key",
]
