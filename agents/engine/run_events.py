"""``events()``: a run and then its streamed answer as one async iterator of events.

:class:`RunAsEvents` is mixed into :class:`~agents.engine.react.ReActAgent` and
:class:`~agents.engine.plan.agent.PlanAgent`; each gives its ``run()`` and how its answer is streamed
(``answer()``), which emits the closing ``done``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from agents.engine.events import Event, EventCallback, iterate_events
from agents.engine.llm import Message
from agents.engine.run_context import RunContext
from agents.engine.synthesis import Answered

R = TypeVar("R")


class RunAsEvents(Generic[R]):
    """The ``events()`` of an agent whose run gives an ``R`` (see the module docstring)."""

    async def run(
        self,
        query: str,
        *,
        history: Sequence[Message] | None = None,
        on_event: EventCallback | None = None,
        metadata: RunContext | Mapping[str, Any] | None = None,
    ) -> R:
        raise NotImplementedError

    async def answer(self, result: R, *, on_event: EventCallback | None = None) -> Answered:
        raise NotImplementedError

    def events(
        self,
        query: str,
        *,
        history: Sequence[Message] | None = None,
        metadata: RunContext | Mapping[str, Any] | None = None,
    ) -> AsyncIterator[Event]:
        """``run()`` then the streamed answer as an async iterator of events (ending with ``done``)."""

        async def produce(on_event: EventCallback) -> None:
            result = await self.run(query, history=history, on_event=on_event, metadata=metadata)
            await self.answer(result, on_event=on_event)

        return iterate_events(produce)


__all__ = ["RunAsEvents"]
