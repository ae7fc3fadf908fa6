"""Why a run stopped: one enum for the ReAct loop, plan mode and the run manager.

The values are what the ``done`` event's ``stop_reason`` and ``Run.stop_reason`` carry (a ``StrEnum``
member is its value wherever a string is expected).
"""

from __future__ import annotations

from enum import StrEnum


class StopReason(StrEnum):
    """Why a run stopped (see the module docstring)."""

    # The ReAct loop.
    FINAL_ANSWER = "final_answer"
    MAX_ITERATIONS = "max_iterations"
    TOKEN_BUDGET = "token_budget"
    LLM_ERROR = "llm_error"
    UNPARSED_OUTPUT = "unparsed_output"
    EMPTY_RESPONSE = "empty_response"
    # A budget of the organisation, the user or the agent would be exceeded by the next model call.
    BUDGET_EXCEEDED = "budget_exceeded"
    # Plan mode.
    ACHIEVED = "achieved"
    CONFIDENT = "confident"
    MAX_ROUNDS = "max_rounds"
    PLANNING_FAILED = "planning_failed"
    # Either, and the run's life around it.
    CANCELLED = "cancelled"
    PARKED = "parked"
    INTERRUPTED = "interrupted"
    ERROR = "error"


__all__ = ["StopReason"]
