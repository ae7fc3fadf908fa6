"""Running the real engine with the real guard rails and connector tools, without a websocket.

:func:`blueprint_for` builds the run's :class:`~agents.runtime.RunBlueprint` from a real run row (as the
runtime does); :func:`run_agent` builds the tools and hooks through the same factories the platform
registers and runs a :class:`ReActAgent` on the scripted LLM, collecting the events hooks emit.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from channels.db import database_sync_to_async

from agents import runtime
from agents.engine.hooks import HookRegistry
from agents.engine.react import AgentResult, ReActAgent
from agents.engine.tools import ToolRegistry
from connectors.tools import connector_tools_for_run
from hooks.registry import guard_rail_hooks
from tests.agents.factories import RunFactory


@dataclass
class Emitted:
    """Events a run emitted through ``blueprint.emit`` (the approval events); ``await next_approval()``
    waits for the next one."""

    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)

    def __call__(self, channel: str, data: dict[str, Any]) -> int:
        self.events.append((channel, dict(data)))
        if channel == "approval":
            self._queue.put_nowait(dict(data))
        return len(self.events)

    async def next_approval(self, within: float = 15) -> dict[str, Any]:
        async with asyncio.timeout(within):
            return await self._queue.get()

    def approvals(self) -> list[dict[str, Any]]:
        return [data for channel, data in self.events if channel == "approval"]


def blueprint_for(world: Any, *, user: Any = None, emit: Emitted | None = None) -> runtime.RunBlueprint:
    """A blueprint for a new run of ``world.conversation`` (sync)."""
    user = user or world.requester
    run = RunFactory(conversation=world.conversation, user=user, status="done")
    return runtime.RunBlueprint(
        run_id=run.pk,
        conversation_id=world.conversation.pk,
        organization_id=world.org.pk,
        organization_slug=world.org.slug,
        user_id=user.pk,
        username=user.get_username(),
        agent_id=world.agent.pk,
        agent_name=world.agent.name,
        instructions=world.agent.instructions,
        max_iterations=10,
        completion_check=False,
        connector_ids=[str(world.erp.pk), str(world.ledger.pk)],
        query="",
        history=[],
        endpoint=runtime.ModelEndpoint(base_url=None, api_key="", model="scripted"),
        emit=emit,
    )


def _build(blueprint: runtime.RunBlueprint) -> tuple[ToolRegistry, HookRegistry]:
    tools = ToolRegistry(connector_tools_for_run(blueprint))
    hooks = HookRegistry(guard_rail_hooks(blueprint).hooks)
    return tools, hooks


async def run_agent(
    world: Any,
    make_llm: Any,
    query: str,
    *,
    user: Any = None,
    emit: Emitted | None = None,
    **agent_options: Any,
) -> AgentResult:
    """Run one question through the engine with the platform's tools and guard rails."""
    blueprint = await database_sync_to_async(blueprint_for)(world, user=user, emit=emit)
    tools, hooks = await database_sync_to_async(_build)(blueprint)
    agent = ReActAgent(
        make_llm(), tools, hooks=hooks, max_iterations=10, completion_check=False, **agent_options
    )
    return await agent.run(query, metadata={**blueprint.context.as_metadata(), "test_run": str(uuid.uuid4())})


@asynccontextmanager
async def cancelled_after(run: asyncio.Task) -> AsyncIterator[None]:
    """Cancel ``run`` once the block is through and check that it ended cancelled (cancelled anyway when
    the block fails)."""
    try:
        yield
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    finally:
        if not run.done():
            run.cancel()
