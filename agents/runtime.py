"""The composition root: everything one run needs, built from the database.

``runtime_build(run_id)`` (sync, run in a worker thread) loads the run's conversation, agent, model
endpoints, tools and history and returns a :class:`RunBlueprint` of plain values; ``engine_for`` turns it
into a ``ReActAgent`` or, in plan mode, a ``PlanAgent`` on the event loop. The engine itself knows nothing
of Django. The run's tools come from the connectors' builder (``connector_tools_for_run``) and the
knowledge bases' (``knowledge_tools_for_run``), and its guard
rails from the hooks' builder (``guard_rail_hooks``), imported here directly: no app registers into this one.

Plan mode picks a model per job from a :class:`~agents.engine.model_registry.ModelRegistry`: ``general`` is the agent's
endpoint (as in ReAct mode) and ``fast``, ``smart`` and ``reasoning`` are the organisation's active model
endpoints of that role, each falling back to ``general`` when the organisation has none.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, TypeVar

from django.conf import settings

from agents.attachments.reading import AttachmentRead, conversation_reader, message_parts
from agents.attachments.search import ChatFiles, chat_files_of_conversation, chat_files_tools_for_run
from agents.attachments.selectors import (
    attachments_of_message,
    conversation_has_attachments,
    conversation_has_attachments_sync,
)
from agents.demo_model import DemoLLM
from agents.endpoint_guard import (
    ModelEndpointGuard,
    model_endpoint_allowed_hosts,
    operator_endpoint_allowed_hosts,
)
from agents.engine import tracing
from agents.engine.attachments import AttachedLLM, has_attachment_references
from agents.engine.context import ContextGuard
from agents.engine.durable.ledger import ToolCallLedger
from agents.engine.fallback import FallbackAnswered, FallbackEndpoint, FallbackLLM
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.hooks import HookRegistry
from agents.engine.llm import LLM, Message, OpenAICompatibleLLM, Usage
from agents.engine.metering import MeteredLLM, ModelCallMeter
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.plan.router import route_execution_mode
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.run_writes import RunWrites
from agents.engine.skills import instructions_with_skills
from agents.engine.tools import ToolRegistry
from agents.fallback_chain import fallback_chain
from agents.knowledge.tool import knowledge_tools_for_run
from agents.memory.connector import MemoryTool, memory_tool_of_org
from agents.memory.prompt import memories_prompt
from agents.memory.recall import Recalled, memory_recall
from agents.memory.tool import memory_tools_for_run
from agents.model_presets import api_key_header_for
from agents.models import (
    NON_CHAT_ROLES,
    Agent,
    Conversation,
    ExecutionMode,
    MessageRole,
    ModelConfig,
    ModelRole,
    Run,
)
from agents.models import Message as MessageRow
from agents.selectors import engine_history
from agents.skills.selectors import AgentSkills, skills_of_agent
from agents.skills.tool import skills_tool_name, skills_tools_for_run
from agents.usage.budgets import BudgetLine, budgets_for_run
from agents.usage.counters import budget_counter
from agents.usage.meter import EndpointAccount, RunMeter, UsageOwner, UsageSink
from agents.usage.pricing import Prices
from connectors.tools import connector_tools_for_run
from hooks.registry import guard_rail_hooks
from platform_core.config_cache import config_cached
from platform_core.config_version import config_version_of

logger = logging.getLogger(__name__)

T = TypeVar("T")


class StartedRun(Protocol):
    """A run just started in this process and its question (``agents.runs.lifecycle.RunStart`` is one;
    a protocol here because the run layer imports this module, not the other way round)."""

    @property
    def run(self) -> Run: ...

    @property
    def message(self) -> MessageRow: ...


@dataclass(frozen=True)
class ModelEndpoint:
    """Where the run's LLM is and what it can do; ``None`` base_url means the offline demo model.

    Every connection to it goes through the SSRF guard; ``allowed_private_hosts`` is the operator's
    allowance (never an org admin's). ``headers`` (the admin's extra headers) and ``query`` (Azure's
    api-version) go with every request; ``api_key_header`` names the header the key goes in when it is not
    ``Authorization: Bearer``. The key and the header values never appear in the repr.
    """

    base_url: str | None
    api_key: str = field(repr=False)
    model: str
    tool_call: bool = True
    json_mode: bool = True
    context_window: int = 128000
    timeout: float = 60.0
    allowed_private_hosts: tuple[str, ...] = ()
    parallel_tool_calls: bool = True
    forced_tool_choice: bool = True
    stream_only: bool = False
    reasoning_output: bool = False
    reasoning_replay: bool | None = None  # None: by host (agents.engine.reasoning)
    vision: bool = False
    max_output_tokens: int | None = None
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)
    query: tuple[tuple[str, str], ...] = ()
    api_key_header: str | None = None
    # The ModelConfig it comes from ("" for the environment's endpoint and the demo model) and its prices
    # (None: cost unknown), for the run's usage rows.
    config_id: str = ""
    prices: Prices | None = None
    # The admin's name of the endpoint (shown when it answers as a fallback) and its active fallbacks, in the
    # order they are tried (agents.fallback_chain).
    name: str = ""
    fallbacks: tuple[ModelEndpoint, ...] = ()

    @property
    def is_demo(self) -> bool:
        return self.base_url is None

    def abilities(self) -> dict[str, bool]:
        """The ``abilities`` mapping of the engine's LLM (``reasoning_replay`` only when set)."""
        found = {
            "tool_call": self.tool_call,
            "parallel_tool_calls": self.parallel_tool_calls,
            "forced_tool_choice": self.forced_tool_choice,
            "json_mode": self.json_mode,
            "stream_only": self.stream_only,
            "reasoning_output": self.reasoning_output,
            "vision": self.vision,
        }
        if self.reasoning_replay is not None:
            found["reasoning_replay"] = self.reasoning_replay
        return found


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
    # react | plan | auto (ExecutionMode); auto asks the fast model once per message.
    execution_mode: str = ExecutionMode.REACT
    organization_name: str = ""
    # Plan mode's model per role (general, fast, smart, reasoning); empty means every role uses `endpoint`.
    role_endpoints: dict[str, ModelEndpoint] = field(default_factory=dict)
    # Emits an event into the run's persisted stream: emit(channel, data) -> seq. Set by the run manager
    # before hooks are built, so hooks (the approval gate) can report to the chat.
    emit: Callable[[str, dict[str, Any]], int | None] | None = None
    # The run's unit of work (its EventSink, agents.engine.run_writes): writes that ride its event batches,
    # set with ``emit``: the call log's rows cost the run no database hop of their own.
    writes: RunWrites | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The organisation's configuration version read with the run: what is loaded the same for every run
    # of the agent is cached per process under it (``platform_core.config_cache``). ``None``: built by
    # hand, nothing cached beyond the run.
    config_version: int | None = None
    # The budgets that count this run's model calls (agents.usage.budgets).
    budgets: list[BudgetLine] = field(default_factory=list)
    # The user's interface language the run was started in ("": unknown; the engine then follows the
    # question's language for its stop and fallback messages).
    language: str = ""
    # Every secret of the run's connectors, set by the run manager with ``writes``: each tool's result is
    # redacted of all of them (a target may answer with another connector's credential).
    run_secrets: tuple[str, ...] = ()
    # The files sent with the question, as content parts after its text (agents.attachments.reading),
    # and how each was read (the run's events record it).
    attachments: tuple[dict[str, Any], ...] = ()
    attachments_read: tuple[AttachmentRead, ...] = ()
    # Whether the question or the history holds an image: the run's model then reads them through
    # AttachedLLM, from the conversation's attachments.
    reads_images: bool = False
    # The conversation's long documents, searched by their own tool (the chat files' connector is then
    # among ``connector_ids``).
    chat_files: ChatFiles | None = None
    # The agent's skills, listed in the system prompt and read with their own tool (the skill library's
    # connector is then among ``connector_ids``).
    skills: AgentSkills | None = None
    # The person's memories given to this run (agent's memory on), and the tool to keep new ones (the
    # memory's connector is then among ``connector_ids``).
    memories: Recalled | None = None
    memory_tool: MemoryTool | None = None

    @property
    def system_prompt(self) -> str:
        """The agent's instructions, with the list of its skills and the person's memories when it has
        them."""
        prompt = self.instructions
        if self.skills is not None:
            prompt = instructions_with_skills(
                prompt, self.skills.listings, tool_name=skills_tool_name(self.skills)
            )
        remembered = memories_prompt(
            self.memories, tool_name=self.memory_tool.tool_name if self.memory_tool else ""
        )
        return "\n\n".join(part for part in (prompt.strip(), remembered) if part)

    @cached_property
    def context(self) -> RunContext:
        """Who is running, as the run's tools and guard rails (and, through the engine, its hooks) see it;
        built once per run."""
        return RunContext(
            org_id=self.organization_id,
            org_slug=self.organization_slug,
            user_id=self.user_id,
            username=self.username,
            agent_id=str(self.agent_id),
            agent_name=self.agent_name,
            conversation_id=str(self.conversation_id),
            run_id=str(self.run_id),
        )


def endpoint_of(config: ModelConfig, *, with_fallbacks: bool = True) -> ModelEndpoint:
    """The endpoint a model configuration describes (with its fallbacks' unless ``with_fallbacks`` is off)."""
    fallbacks = (
        tuple(endpoint_of(f, with_fallbacks=False) for f in fallback_chain(config))
        if with_fallbacks and config.fallback_id is not None
        else ()
    )
    return ModelEndpoint(
        base_url=config.base_url,
        api_key=config.api_key or "not-needed",
        model=config.model,
        tool_call=config.tool_call,
        json_mode=config.json_mode,
        context_window=config.context_window,
        timeout=config.timeout,
        allowed_private_hosts=model_endpoint_allowed_hosts(),
        parallel_tool_calls=config.parallel_tool_calls,
        forced_tool_choice=config.forced_tool_choice,
        stream_only=config.stream_only,
        reasoning_output=config.reasoning_output,
        reasoning_replay=config.reasoning_replay,
        vision=config.vision,
        max_output_tokens=config.max_output_tokens,
        headers=tuple(sorted(config.headers.items())),
        query=(("api-version", config.api_version),) if config.api_version else (),
        api_key_header=api_key_header_for(config.provider),
        config_id=str(config.pk),
        prices=Prices.of(
            input=config.price_input,
            output=config.price_output,
            cached_input=config.price_cached_input,
            currency=config.price_currency,
        ),
        name=config.name,
        fallbacks=fallbacks,
    )


def agent_reads_images(agent: Agent) -> bool:
    """Whether the model that answers for ``agent`` accepts images (its endpoint's ``vision``)."""
    return endpoint_for_agent(agent).vision


def endpoint_for_agent(agent: Agent, *, config_version: int | None = None) -> ModelEndpoint:
    """The agent's endpoint, else the organisation's default, else the environment's, else the demo model.

    With the organisation's ``config_version`` its default is looked up once per version and process.
    """
    config = agent.model_config if agent.model_config is not None and agent.model_config.active else None
    if config is None:
        config = _cached(
            agent, config_version, "default_model", lambda: _default_model(agent.organization_id)
        )
    if config is not None:
        return endpoint_of(config)
    if settings.OPENAI_BASE_URL:
        return ModelEndpoint(
            base_url=settings.OPENAI_BASE_URL,
            api_key=settings.OPENAI_API_KEY or "not-needed",
            model=settings.LLM_MODEL or "default",
            tool_call=settings.LLM_TOOL_CALL,
            json_mode=settings.LLM_JSON_MODE,
            context_window=settings.LLM_CONTEXT_WINDOW,
            allowed_private_hosts=operator_endpoint_allowed_hosts(settings.OPENAI_BASE_URL),
        )
    return ModelEndpoint(base_url=None, api_key="", model="offline-demo-model", context_window=32000)


def default_model_of(organization_id: int) -> ModelConfig | None:
    """The organisation's default chat endpoint, when it has an active one (sync: one query)."""
    return _default_model(organization_id)


def _default_model(organization_id: int) -> ModelConfig | None:
    return (
        ModelConfig.objects.filter(organization_id=organization_id, is_default=True, active=True)
        .exclude(role__in=NON_CHAT_ROLES)
        .order_by("name")
        .first()
    )


def _role_models(organization_id: int) -> list[ModelConfig]:
    return list(
        ModelConfig.objects.filter(organization_id=organization_id, active=True)
        .exclude(role__in=(ModelRole.GENERAL, *NON_CHAT_ROLES))
        .order_by("-is_default", "name")
    )


def _cached(agent: Agent, config_version: int | None, key: str, load: Callable[[], T]) -> T:
    if config_version is None:
        return load()
    return config_cached(agent.pk, config_version, key, load)


def endpoints_by_role(
    agent: Agent, general: ModelEndpoint | None = None, *, config_version: int | None = None
) -> dict[str, ModelEndpoint]:
    """Plan mode's endpoint for every model role (sync).

    ``general`` is the agent's endpoint; ``fast``, ``smart`` and ``reasoning`` are the organisation's
    active endpoints of that role (its default first, then by name); a role with none uses ``general``.
    """
    general = general if general is not None else endpoint_for_agent(agent, config_version=config_version)
    chosen: dict[str, ModelEndpoint] = {ModelRole.GENERAL: general}
    for config in _cached(agent, config_version, "role_models", lambda: _role_models(agent.organization_id)):
        chosen.setdefault(config.role, endpoint_of(config))
    # The chat roles: an embedding or rerank endpoint never chats (agents.knowledge uses them).
    return {role: chosen.get(role, general) for role in ModelRole.values if role not in NON_CHAT_ROLES}


def runtime_build(run_id: uuid.UUID, *, started: StartedRun | None = None) -> RunBlueprint:
    """Load everything a run needs (sync: call it through ``database_sync_to_async``).

    What every run of the agent loads the same (its connectors and default models here, its actions and
    hook settings in the factories) comes from the process's cache while the organisation's
    configuration version is unchanged. ``started`` (the new run's start, in this process) gives the
    run, its user and its question, so only its conversation and agent are read, fresh.
    """
    if started is not None:
        run, question = started.run, started.message
        conversation = (
            Conversation.objects.for_org(run.organization_id)
            .select_related("agent__model_config", "organization__config_version")
            .annotate(has_attachments=conversation_has_attachments())
            .get(pk=run.conversation_id)
        )
    else:
        # A worker resuming the run by the id it was handed (see agents.runs.addressed).
        run = (
            Run.objects.unscoped()
            .select_related(
                "conversation__agent__model_config", "conversation__organization__config_version", "user"
            )
            .get(pk=run_id)
        )
        conversation = run.conversation
        first = (
            MessageRow.objects.filter(run=run, role=MessageRole.USER, injected=False).order_by("id").first()
        )
        if first is None:
            raise LookupError(f"run {run_id} has no question")
        question = first
    agent = conversation.agent
    version = config_version_of(conversation.organization)
    endpoint = endpoint_for_agent(agent, config_version=version)
    # A conversation without attachments (most) costs no query for them.
    has_attachments = getattr(conversation, "has_attachments", None)
    if has_attachments is None:
        has_attachments = conversation_has_attachments_sync(conversation)
    chat_files = (
        chat_files_of_conversation(
            organization_id=conversation.organization_id, conversation_id=conversation.pk
        )
        if has_attachments
        else None
    )
    search_tool = chat_files.tool_name if chat_files is not None else None
    history = engine_history(
        conversation_id=conversation.pk,
        before_message_id=question.pk,
        organization_id=conversation.organization_id if has_attachments else None,
        search_tool=search_tool,
    )
    attached = message_parts(
        list(attachments_of_message(organization_id=conversation.organization_id, message_id=question.pk))
        if has_attachments
        else [],
        search_tool=search_tool,
    )
    connector_ids = _cached(agent, version, "connector_ids", lambda: _active_connector_ids(agent))
    skills = _cached(
        agent,
        version,
        "skills",
        lambda: skills_of_agent(organization_id=conversation.organization_id, agent_id=agent.pk),
    )
    memory_tool = memory_tool_of_org(conversation.organization_id) if agent.memory else None
    memories = (
        memory_recall(
            organization_id=conversation.organization_id, user_id=run.user_id, query=question.content
        )
        if agent.memory
        else None
    )
    extra_connectors = [
        found.connector_id for found in (chat_files, skills, memory_tool) if found is not None
    ]
    mode = agent.execution_mode
    return RunBlueprint(
        run_id=run.pk,
        conversation_id=conversation.pk,
        organization_id=conversation.organization_id,
        organization_slug=conversation.organization.slug,
        organization_name=conversation.organization.name,
        config_version=version,
        user_id=run.user_id,
        username=run.user.get_username(),
        agent_id=agent.pk,
        agent_name=agent.name,
        instructions=agent.instructions,
        max_iterations=agent.max_iterations,
        completion_check=agent.completion_check,
        connector_ids=[*connector_ids, *extra_connectors] if extra_connectors else connector_ids,
        chat_files=chat_files,
        skills=skills,
        memories=memories,
        memory_tool=memory_tool,
        query=question.content,
        language=run.language,
        history=history,
        attachments=attached.parts,
        attachments_read=attached.read,
        reads_images=attached.has_images or has_attachment_references(history),
        endpoint=endpoint,
        execution_mode=mode,
        role_endpoints=(
            endpoints_by_role(agent, endpoint, config_version=version) if mode != ExecutionMode.REACT else {}
        ),
        budgets=budgets_for_run(
            organization_id=conversation.organization_id,
            user_id=run.user_id,
            agent_id=agent.pk,
            config_version=version,
        ),
    )


def _active_connector_ids(agent: Agent) -> list[str]:
    return [str(pk) for pk in agent.connectors.filter(is_active=True).values_list("pk", flat=True)]


def llm_for(endpoint: ModelEndpoint) -> LLM:
    """The endpoint's LLM: every connection it opens (redirects included) goes through the SSRF guard."""
    if endpoint.is_demo:
        return DemoLLM(context_window=endpoint.context_window)
    return OpenAICompatibleLLM(
        base_url=endpoint.base_url or "",
        api_key=endpoint.api_key,
        model=endpoint.model,
        abilities=endpoint.abilities(),
        context_window=endpoint.context_window,
        timeout=endpoint.timeout,
        guard=ModelEndpointGuard(endpoint.allowed_private_hosts),
        default_headers=dict(endpoint.headers) or None,
        default_query=dict(endpoint.query) or None,
        api_key_header=endpoint.api_key_header,
        max_output_tokens=endpoint.max_output_tokens,
    )


def run_llm_for(blueprint: RunBlueprint, endpoint: ModelEndpoint) -> LLM:
    """The endpoint's LLM for one run: reading the conversation's attached images when the run has some
    (the innermost wrapper, so budgets and token estimates count an image's reference, not its bytes)."""
    llm = llm_for(endpoint)
    if blueprint.reads_images:
        reader = conversation_reader(
            organization_id=blueprint.organization_id, conversation_id=blueprint.conversation_id
        )
        llm = AttachedLLM(llm, reader)
    return llm


def tools_for(blueprint: RunBlueprint) -> ToolRegistry:
    """The run's tools: its agent's connector actions, the search of its knowledge bases the user may
    read, of its conversation's long files, and the reading of its skills (sync: reads the database);
    traced when tracing is on."""
    tools = (
        connector_tools_for_run(blueprint)
        + knowledge_tools_for_run(blueprint)
        + chat_files_tools_for_run(blueprint)
        + skills_tools_for_run(blueprint)
        + memory_tools_for_run(blueprint)
    )
    if tracing.enabled():
        attributes = trace_attributes(blueprint)
        tools = [tracing.TracedTool(tool, attributes) for tool in tools]
    return ToolRegistry(tools)


def hooks_for(blueprint: RunBlueprint) -> HookRegistry:
    """The run's guard rails (sync: reads the database); their verdicts traced when tracing is on. Each
    hook gets the call it judges, with the plan step that made it (``HookContext.call``), as an argument."""
    hooks = guard_rail_hooks(blueprint).hooks
    if tracing.enabled():
        return tracing.TracedHookRegistry(trace_attributes(blueprint), hooks)
    return HookRegistry(hooks)


# -- plan mode ------------------------------------------------------------------------------------


def registry_for(blueprint: RunBlueprint, *, meter: ModelCallMeter | None = None) -> ModelRegistry:
    """The run's models by role; roles that share an endpoint share one LLM (and its HTTP client). With a
    ``meter`` every call of every model is checked against the run's budgets and recorded."""
    endpoints = blueprint.role_endpoints or {ModelRole.GENERAL: blueprint.endpoint}
    built: dict[ModelEndpoint, LLM] = {}
    models: dict[str, LLM] = {}

    traced = trace_attributes(blueprint) if tracing.enabled() else None

    def metered(endpoint: ModelEndpoint) -> LLM:
        llm = run_llm_for(blueprint, endpoint)
        if meter is not None:
            llm = MeteredLLM(
                llm, meter, endpoint_id=endpoint_key(endpoint), max_output_tokens=endpoint.max_output_tokens
            )
        if traced is not None:
            llm = tracing.TracedLLM(llm, {**traced, "endpoint": endpoint.name or endpoint.model})
        return llm

    on_fallback = fallback_reporter(blueprint)
    for role, endpoint in endpoints.items():
        if endpoint not in built:
            # Each endpoint of a chain is metered on its own: a call is counted where it was answered.
            built[endpoint] = (
                FallbackLLM(
                    [
                        FallbackEndpoint(e.name or e.model, metered(e))
                        for e in (endpoint, *endpoint.fallbacks)
                    ],
                    on_fallback=on_fallback,
                )
                if endpoint.fallbacks
                else metered(endpoint)
            )
        models[role] = built[endpoint]
    return ModelRegistry(models)


def trace_attributes(blueprint: RunBlueprint) -> dict[str, str | int | bool]:
    """Who a run's spans are about (never its prompts): organisation, agent and run."""
    return {
        "org": blueprint.organization_slug,
        "org.id": blueprint.organization_id,
        "agent": str(blueprint.agent_id),
        "agent.name": blueprint.agent_name,
        "run": str(blueprint.run_id),
    }


def fallback_reporter(blueprint: RunBlueprint) -> Callable[[FallbackAnswered], None]:
    """What the run does when a fallback endpoint answered: a ``step`` event ``{"type": "fallback",
    "endpoint", "failed", "reason"}`` the first time each fallback answers in the run (the chat's footer
    says which endpoint answered; the event is stored with the run's others)."""
    reported: set[str] = set()

    def report(answered: FallbackAnswered) -> None:
        logger.info(
            "run %s: fallback endpoint %r answered (%s)", blueprint.run_id, answered.endpoint, answered.reason
        )
        if answered.endpoint in reported or blueprint.emit is None:
            return
        reported.add(answered.endpoint)
        blueprint.emit(
            "step",
            {
                "type": "fallback",
                "endpoint": answered.endpoint,
                "failed": list(answered.failed),
                "reason": answered.reason,
            },
        )

    return report


def endpoint_key(endpoint: ModelEndpoint) -> str:
    """How the meter names an endpoint: its ModelConfig's id, else its model."""
    return endpoint.config_id or f"model:{endpoint.model}"


def meter_for(blueprint: RunBlueprint, sink: UsageSink) -> RunMeter:
    """The run's meter: its budgets (counted in Redis or the database) and its usage rows into ``sink``."""
    endpoints = {blueprint.endpoint, *blueprint.role_endpoints.values()}
    endpoints |= {f for e in endpoints for f in e.fallbacks}
    return RunMeter(
        owner=UsageOwner(
            organization_id=blueprint.organization_id,
            user_id=blueprint.user_id,
            agent_id=blueprint.agent_id,
            run_id=blueprint.run_id,
        ),
        endpoints={
            endpoint_key(e): EndpointAccount(
                uuid.UUID(e.config_id) if e.config_id else None, e.prices, e.name if e.config_id else ""
            )
            for e in endpoints
        },
        budgets=blueprint.budgets,
        counter=budget_counter() if blueprint.budgets else None,
        sink=sink,
    )


async def execution_mode_for(
    blueprint: RunBlueprint, registry: ModelRegistry, *, usage: Usage
) -> ExecutionMode:
    """``react`` or ``plan`` for this message: the agent's mode, or in ``auto`` one call to the fast model
    (any failure of that call means ``react``)."""
    mode = blueprint.execution_mode
    if blueprint.attachments:
        # Plan mode's steps do not read the question's files: a question with attachments runs the loop.
        return ExecutionMode.REACT
    if mode == ExecutionMode.AUTO:
        mode = await route_execution_mode(registry.get(ModelRole.FAST), blueprint.query, usage=usage)
        logger.info("run %s routed to %s mode", blueprint.run_id, mode)
    return ExecutionMode.PLAN if mode == ExecutionMode.PLAN else ExecutionMode.REACT


def engine_for(
    blueprint: RunBlueprint,
    *,
    tools: ToolRegistry,
    hooks: HookRegistry,
    follow_ups: FollowUpQueue,
    mode: str = ExecutionMode.REACT,
    registry: ModelRegistry | None = None,
    ledger: ToolCallLedger | None = None,
) -> ReActAgent | PlanAgent:
    """The engine of one run: a ``ReActAgent`` on the general model, or in plan mode a ``PlanAgent`` with
    the same tools, the same hooks (no guard rail is bypassed by planning) and the same follow-up queue.
    ``ledger`` records the run's tool calls so a resumed run never makes one twice."""
    tracing.annotate_current_run({**trace_attributes(blueprint), "mode": str(mode)})
    if mode == ExecutionMode.PLAN:
        return PlanAgent(
            registry if registry is not None else registry_for(blueprint),
            tools,
            hooks=hooks,
            follow_ups=follow_ups,
            system_prompt=blueprint.system_prompt,
            agent_options={
                "max_iterations": blueprint.max_iterations,
                "completion_check": blueprint.completion_check,
                "ledger": ledger,
            },
        )
    llm = (
        registry.get(ModelRole.GENERAL)
        if registry is not None
        else run_llm_for(blueprint, blueprint.endpoint)
    )
    return ReActAgent(
        llm,
        tools,
        system_prompt=blueprint.system_prompt,
        hooks=hooks,
        max_iterations=blueprint.max_iterations,
        completion_check=blueprint.completion_check,
        context_guard=ContextGuard(llm, context_window=blueprint.endpoint.context_window),
        follow_ups=follow_ups,
        ledger=ledger,
    )
