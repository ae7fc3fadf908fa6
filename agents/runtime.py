"""The composition root: everything one run needs, built from the database.

``runtime_build(run_id)`` (sync, run in a worker thread) loads the run's conversation, agent, model
endpoint, tools and history and returns a :class:`RunBlueprint` of plain values; ``engine_for`` turns it
into a ``ReActAgent`` on the event loop. The engine itself knows nothing of Django.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agents.demo_model import DemoLLM
from agents.engine.context import ContextGuard
from agents.engine.hooks import HookRegistry
from agents.engine.interrupts import InterruptQueue
from agents.engine.llm import LLM, Message, OpenAICompatibleLLM
from agents.engine.react import ReActAgent
from agents.engine.tools import Tool, ToolRegistry
from agents.models import Agent, MessageRole, ModelConfig, Run
from agents.models import Message as MessageRow
from agents.selectors import engine_history

# Hook factories registered by other apps (the hooks app adds the built-in guard rails). Each takes the
# blueprint and returns hooks for that run.
HOOK_FACTORIES: list[Callable[[RunBlueprint], list[Any]]] = []
# Tool factories registered by other apps (the connectors app turns connector actions into tools).
TOOL_FACTORIES: list[Callable[[RunBlueprint], list[Tool]]] = []


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the run's LLM is; ``None`` base_url means the offline demo model."""

    base_url: str | None
    api_key: str
    model: str
    tool_call: bool = True
    json_mode: bool = True
    context_window: int = 128000
    timeout: float = 60.0

    @property
    def is_demo(self) -> bool:
        return self.base_url is None


@dataclass
class RunBlueprint:
    """Plain facts about one run, loaded from the database before the engine starts."""

    run_id: uuid.UUID
    conversation_id: uuid.UUID
    organization_id: int
    organization_slug: str
    user_id: int
    username: str
    agent_id: uuid.UUID
    agent_name: str
    instructions: str
    max_iterations: int
    completion_check: bool
    connector_ids: list[str]
    query: str
    history: list[Message]
    endpoint: ModelEndpoint
    # Emits an event into the run's persisted stream: emit(channel, data) -> seq. Set by the run manager
    # before hooks are built, so hooks (the approval gate) can report to the chat.
    emit: Callable[[str, dict[str, Any]], int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        """What every hook sees about the run."""
        return {
            "org_id": self.organization_id,
            "org_slug": self.organization_slug,
            "user_id": self.user_id,
            "username": self.username,
            "agent_id": str(self.agent_id),
            "agent_name": self.agent_name,
            "conversation_id": str(self.conversation_id),
            "run_id": str(self.run_id),
        }


def endpoint_for_agent(agent: Agent) -> ModelEndpoint:
    """The agent's endpoint, else the organisation's default, else the environment's, else the demo model."""
    config = agent.model_config if agent.model_config is not None and agent.model_config.active else None
    if config is None:
        config = (
            ModelConfig.objects.filter(organization_id=agent.organization_id, is_default=True, active=True)
            .order_by("name")
            .first()
        )
    if config is not None:
        return ModelEndpoint(
            base_url=config.base_url,
            api_key=config.api_key or "not-needed",
            model=config.model,
            tool_call=config.tool_call,
            json_mode=config.json_mode,
            context_window=config.context_window,
            timeout=config.timeout,
        )
    if settings.OPENAI_BASE_URL:
        return ModelEndpoint(
            base_url=settings.OPENAI_BASE_URL,
            api_key=settings.OPENAI_API_KEY or "not-needed",
            model=settings.LLM_MODEL or "default",
            tool_call=settings.LLM_TOOL_CALL,
            json_mode=settings.LLM_JSON_MODE,
            context_window=settings.LLM_CONTEXT_WINDOW,
        )
    return ModelEndpoint(base_url=None, api_key="", model="offline-demo-model", context_window=32000)


def runtime_build(run_id: uuid.UUID) -> RunBlueprint:
    """Load everything a run needs (sync: call it through ``database_sync_to_async``)."""
    run = Run.objects.select_related("conversation__agent", "conversation__organization", "user").get(
        pk=run_id
    )
    conversation = run.conversation
    agent = conversation.agent
    question = (
        MessageRow.objects.filter(run=run, role=MessageRole.USER, injected=False).order_by("id").first()
    )
    if question is None:
        raise LookupError(f"run {run_id} has no question")
    return RunBlueprint(
        run_id=run.pk,
        conversation_id=conversation.pk,
        organization_id=conversation.organization_id,
        organization_slug=conversation.organization.slug,
        user_id=run.user_id,
        username=run.user.get_username(),
        agent_id=agent.pk,
        agent_name=agent.name,
        instructions=agent.instructions,
        max_iterations=agent.max_iterations,
        completion_check=agent.completion_check,
        connector_ids=[
            str(pk) for pk in agent.connectors.filter(is_active=True).values_list("pk", flat=True)
        ],
        query=question.content,
        history=engine_history(conversation_id=conversation.pk, before_message_id=question.pk),
        endpoint=endpoint_for_agent(agent),
    )


def llm_for(endpoint: ModelEndpoint) -> LLM:
    if endpoint.is_demo:
        return DemoLLM(context_window=endpoint.context_window)
    return OpenAICompatibleLLM(
        base_url=endpoint.base_url or "",
        api_key=endpoint.api_key,
        model=endpoint.model,
        abilities={"tool_call": endpoint.tool_call, "json_mode": endpoint.json_mode},
        context_window=endpoint.context_window,
        timeout=endpoint.timeout,
    )


def tools_for(blueprint: RunBlueprint) -> ToolRegistry:
    """Every tool the registered factories provide for this run (sync: factories may query the database)."""
    registry = ToolRegistry()
    for factory in TOOL_FACTORIES:
        for tool in factory(blueprint):
            registry.register(tool)
    return registry


def hooks_for(blueprint: RunBlueprint) -> HookRegistry:
    registry = HookRegistry()
    for factory in HOOK_FACTORIES:
        for hook in factory(blueprint):
            registry.add(hook)
    return registry


def engine_for(
    blueprint: RunBlueprint, *, tools: ToolRegistry, hooks: HookRegistry, interrupt_queue: InterruptQueue
) -> ReActAgent:
    """The ``ReActAgent`` of one run."""
    llm = llm_for(blueprint.endpoint)
    return ReActAgent(
        llm,
        tools,
        system_prompt=blueprint.instructions,
        hooks=hooks,
        max_iterations=blueprint.max_iterations,
        completion_check=blueprint.completion_check,
        context_guard=ContextGuard(llm, context_window=blueprint.endpoint.context_window),
        interrupt_queue=interrupt_queue,
    )
