"""The durable-run part of the ReAct loop: checkpoints, resuming from one, parking.

:class:`DurableLoop` is mixed into :class:`~agents.engine.react.ReActAgent`; it relies on the agent's
``_checkpoint_cb``, ``_tool_turn``, ``_drive``, ``_native_mode_active`` and ``follow_ups``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from agents.engine.guidance import drain_follow_ups
from agents.engine.run_state import AgentResult, RunState
from agents.engine.stop_reasons import StopReason
from agents.engine.turn import Continue, TurnParked
from agents.engine.verdicts import Park

if TYPE_CHECKING:
    from agents.engine.durable.checkpoint import CheckpointCallback
    from agents.engine.follow_ups import FollowUpQueue

logger = logging.getLogger(__name__)


class DurableLoop:
    """Checkpoint, resume and park a ReAct run (see ``agents.engine.react``'s module docstring)."""

    _checkpoint_cb: CheckpointCallback | None
    follow_ups: FollowUpQueue | None

    @property
    def _native_mode_active(self) -> bool:
        raise NotImplementedError

    async def _tool_turn(
        self, run: RunState, calls: Any, *, native: bool, replay: bool = False
    ) -> Continue | TurnParked:
        raise NotImplementedError

    async def _drive(self, run: RunState, native: bool) -> AgentResult:
        raise NotImplementedError

    async def _resume(self, run: RunState) -> AgentResult:
        """Continue a restored run: its answer if it had one, else its pending calls, then the loop."""
        logger.info("resuming a run at iteration %d (%s)", run.iteration, run.stage)
        if run.final is not None:
            return run.result(*run.final)
        native = self._native_mode_active
        if run.pending is not None:
            outcome = await self._tool_turn(run, run.pending, native=native, replay=True)
            if isinstance(outcome, TurnParked):
                return await self._park(run, outcome.park)
            if native:
                await drain_follow_ups(run, self.follow_ups)
            await self._checkpoint(run)
        return await self._drive(run, native)

    async def _checkpoint(self, run: RunState) -> None:
        callback = self._checkpoint_cb
        if callback is None:
            return
        try:
            await callback(run.checkpoint())
        except Exception as exc:
            run.checkpoint_failed()  # the next checkpoint carries everything again
            logger.warning("checkpoint callback failed: %s", type(exc).__name__)

    async def _park(self, run: RunState, park: Park) -> AgentResult:
        """End the run parked: no ``done``; a last checkpoint keeps the pending calls for the resume."""
        logger.info("run parked at iteration %d: %s", run.iteration, park.reason)
        await self._checkpoint(run)  # with the pending calls and which of them the chat has seen
        return run.result("", StopReason.PARKED, park=park)
