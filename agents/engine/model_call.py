"""One model call of the tool loop: compaction before it, one retry after a context-length error."""

from __future__ import annotations

import logging
import time
from typing import Any

from agents.engine import events
from agents.engine.llm import LLM, ChatResponse, ContextLengthExceededError, EndpointRefusedError, LLMError
from agents.engine.run_state import RunState

logger = logging.getLogger(__name__)


class LLMFailed(Exception):
    """The model could not be reached (after the client's retries): the run ends with ``llm_error``."""

    def __init__(self, cause: LLMError) -> None:
        super().__init__(str(cause))
        self.cause = cause

    @property
    def label(self) -> str:
        """What the user is told: a refused endpoint's reason (a configuration error), else the error's type."""
        return str(self.cause) if isinstance(self.cause, EndpointRefusedError) else type(self.cause).__name__


async def ask(llm: LLM, run: RunState, guard: Any | None, **kwargs: Any) -> ChatResponse:
    """Call ``llm.chat`` with the run's history (provider view), after the context guard's check.

    A provider "context length exceeded" error compacts the history to half the guard's budget and
    retries once. Raises :class:`LLMFailed` for any other :class:`LLMError`, after closing the call's
    ``thinking`` step with the error.
    """
    started = time.perf_counter()
    if guard is not None:
        await compact(guard, run)
    asked = time.perf_counter()
    run.turn_compaction = asked - started
    if run.emit.active:
        await run.emit(events.thinking_start(run.iteration))
    try:
        try:
            response = await llm.chat(run.transcript.wire, **kwargs)
        except ContextLengthExceededError:
            if guard is None:
                raise
            logger.info("context length exceeded; compacting to half the budget and retrying once")
            retry_started = time.perf_counter()
            compacted = await compact(guard, run, target_tokens=half_budget(guard, llm))
            run.turn_compaction += time.perf_counter() - retry_started
            if not compacted:
                raise
            response = await llm.chat(run.transcript.wire, **kwargs)
    except LLMError as exc:
        failed = LLMFailed(exc)
        if run.emit.active:
            await run.emit(events.thinking_done(run.iteration, "", error=failed.label))
        raise failed from exc
    run.turn_llm = time.perf_counter() - asked
    run.usage.add(response.usage)
    return response


def half_budget(guard: Any, llm: LLM) -> int:
    """Half the guard's token budget (half the model's context window if the guard has none)."""
    budget = getattr(guard, "budget", None)
    if not isinstance(budget, int) or budget <= 0:
        budget = llm.context_window
    return max(1, budget // 2)


async def compact(guard: Any, run: RunState, *, target_tokens: int | None = None) -> bool:
    """Let the guard compact the history; emit ``compact`` when it did. Never raises."""
    try:
        outcome = await guard.check_and_compact(
            run.transcript.messages, usage=run.usage, target_tokens=target_tokens
        )
    except Exception as exc:  # compaction is best effort: an oversized request fails on its own
        logger.warning("context compaction failed (%s); keeping the history", type(exc).__name__)
        return False
    if not outcome.compacted:
        return False
    run.transcript.replace(outcome.messages)
    if run.emit.active:
        await run.emit(events.compact(outcome.original_messages, outcome.kept_messages))
    return True
