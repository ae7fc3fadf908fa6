"""A run built as the run manager builds it (``runtime.runtime_build``), then driven through the ReAct
loop with its tools and guard rails, for tests of what a model sees and does in a real run."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from agents import runtime
from agents.engine.hooks import HookRegistry
from agents.engine.react import ReActAgent
from hooks.registry import guard_rail_hooks
from tests.agents.factories import ConversationFactory, MessageFactory, RunFactory


def blueprint_of(org: Any, agent: Any, user: Any, question: str) -> runtime.RunBlueprint:
    """A new conversation of ``user`` with ``agent`` whose running run asks ``question``, loaded (sync)."""
    conversation = ConversationFactory(organization=org, agent=agent, user=user)
    run: Any = RunFactory(conversation=conversation, user=user, status="running")
    MessageFactory(conversation=conversation, content=question, run=run)
    return runtime.runtime_build(run.pk)


async def react_over(
    blueprint: runtime.RunBlueprint, llm: Any, *, max_iterations: int = 5
) -> tuple[ReActAgent, Any]:
    """The loop over ``blueprint``'s tools, guard rails and system prompt with ``llm``, and its result for
    the run's question."""

    def build() -> tuple[Any, HookRegistry]:
        return runtime.tools_for(blueprint), HookRegistry(guard_rail_hooks(blueprint).hooks)

    tools, hooks = await database_sync_to_async(build)()
    agent = ReActAgent(
        llm,
        tools,
        system_prompt=blueprint.system_prompt,
        hooks=hooks,
        max_iterations=max_iterations,
        completion_check=False,
    )
    return agent, await agent.run(blueprint.query, metadata=blueprint.context.as_metadata())
