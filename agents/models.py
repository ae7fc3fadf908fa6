"""Agents, their model endpoints, conversations, runs and the persisted event stream."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents.endpoint_guard import validate_model_endpoint_url
from agents.endpoint_headers import headers_parse
from agents.example_questions import validate_example_questions
from agents.fallback_chain import fallback_problem
from agents.model_presets import chat_provider_problem, rerank_base_url_problem
from platform_core.crypto import EncryptedTextField
from platform_core.model_fields import optional_foreign_key
from platform_core.models import OrgOwnedModel


class ModelRole(models.TextChoices):
    GENERAL = "general", _("General")
    FAST = "fast", _("Fast")
    SMART = "smart", _("Smart")
    REASONING = "reasoning", _("Reasoning")
    # Turns text into vectors for knowledge-base search (OpenAI-compatible /embeddings); never chats.
    EMBEDDING = "embedding", _("Embedding")
    # Scores a search's passages against its question (POST /rerank, Jina/Cohere-compatible); never chats.
    RERANK = "rerank", _("Rerank")


# The roles whose endpoints never chat: no agent's model, no organisation default, no plan-mode role.
NON_CHAT_ROLES: tuple[str, ...] = (ModelRole.EMBEDDING, ModelRole.RERANK)


class ModelProvider(models.TextChoices):
    """Who serves the endpoint: its preset (``agents.model_presets``) fills the form; "custom" is none."""

    OPENAI = "openai", _("OpenAI")
    AZURE_OPENAI = "azure-openai", _("Azure OpenAI")
    DEEPSEEK = "deepseek", _("DeepSeek")
    QWEN_DASHSCOPE = "qwen-dashscope", _("Qwen (Alibaba Cloud Model Studio / DashScope)")
    GLM_ZHIPU = "glm-zhipu", _("GLM (Zhipu AI)")
    KIMI_MOONSHOT = "kimi-moonshot", _("Kimi (Moonshot AI)")
    DOUBAO_ARK = "doubao-ark", _("Doubao (Volcengine Ark)")
    VLLM = "vllm", _("vLLM (self-hosted)")
    SGLANG = "sglang", _("SGLang (self-hosted)")
    OLLAMA = "ollama", _("Ollama (self-hosted)")
    JINA = "jina", _("Jina AI (reranking)")
    COHERE = "cohere", _("Cohere (reranking)")
    CUSTOM = "custom", _("Other OpenAI-compatible endpoint")


def model_config_role_problems(
    *, role: str, provider: str, base_url: str, is_default: bool
) -> dict[str, str]:
    """What is wrong with an endpoint's role, by field: an embedding or rerank endpoint made the
    organisation's default for chats, a chat role with a provider that only reranks, a rerank endpoint at
    its provider's chat address (the admin's form and the API apply the same rules)."""
    problems: dict[str, str] = {}
    if role == ModelRole.EMBEDDING and is_default:
        problems["is_default"] = str(
            _("An embedding endpoint cannot be the organisation's default for chats.")
        )
    if role == ModelRole.RERANK and is_default:
        problems["is_default"] = str(_("A rerank endpoint cannot be the organisation's default for chats."))
    if (problem := chat_provider_problem(provider, role)) is not None:
        problems["provider"] = problem
    if (problem := rerank_base_url_problem(provider, role, base_url)) is not None:
        problems["base_url"] = problem
    return problems


class ModelConfig(OrgOwnedModel):
    """An organisation's OpenAI-compatible endpoint and what it can do. The API key and the extra headers
    (gateways put secrets there) are stored encrypted; the last "Check endpoint" report is kept with it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("name"), max_length=100)
    role = models.CharField(_("role"), max_length=16, choices=ModelRole.choices, default=ModelRole.GENERAL)
    base_url = models.URLField(
        _("base URL"), max_length=500, help_text=_("For example https://api.openai.com/v1")
    )
    model = models.CharField(_("model name"), max_length=200)
    api_key = EncryptedTextField(_("API key"))
    provider = models.CharField(
        _("provider"), max_length=32, choices=ModelProvider.choices, default=ModelProvider.CUSTOM
    )
    tool_call = models.BooleanField(_("supports function calling"), default=True)
    parallel_tool_calls = models.BooleanField(
        _("supports parallel tool calls"),
        default=True,
        help_text=_("Several tool calls in one reply. Off: the engine asks for one call per model turn."),
    )
    forced_tool_choice = models.BooleanField(
        _("supports forced tool choice"),
        default=True,
        help_text=_("Accepts tool_choice “required” or a named function. Off: only “auto” is sent."),
    )
    json_mode = models.BooleanField(_("supports JSON mode"), default=True)
    stream_only = models.BooleanField(
        _("answers streamed requests only"),
        default=False,
        help_text=_("For models that refuse non-streamed calls (e.g. Qwen3 open-source models thinking)."),
    )
    reasoning_output = models.BooleanField(_("returns reasoning"), default=False)
    reasoning_replay = models.BooleanField(
        _("send reasoning back"),
        null=True,
        blank=True,
        default=None,
        help_text=_(
            "Send the reasoning of tool-calling turns back (DeepSeek, Kimi and GLM thinking models require "
            "it). Unknown: by host (off for OpenAI and Azure, on elsewhere)."
        ),
    )
    vision = models.BooleanField(_("accepts images"), default=False)
    context_window = models.PositiveIntegerField(
        _("context window (tokens)"), default=128000, validators=[MinValueValidator(8192)]
    )
    max_output_tokens = models.PositiveIntegerField(
        _("output limit (tokens)"),
        null=True,
        blank=True,
        validators=[MinValueValidator(16)],
        help_text=_("Sent as max_tokens on every call. Empty: the provider's default."),
    )
    api_version = models.CharField(
        _("API version"),
        max_length=40,
        blank=True,
        help_text=_("Azure OpenAI: sent as the api-version query parameter. Empty elsewhere."),
    )
    extra_headers = EncryptedTextField(_("extra headers"))
    timeout = models.FloatField(_("timeout (seconds)"), default=60.0, validators=[MinValueValidator(1)])
    # Prices per million tokens (empty: the cost of a call is unknown); see agents/usage/pricing.py.
    price_input = models.DecimalField(
        _("price per million input tokens"),
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
    )
    price_cached_input = models.DecimalField(
        _("price per million cached input tokens"),
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
        help_text=_("Empty: cached input tokens cost the input price."),
    )
    price_output = models.DecimalField(
        _("price per million output tokens"),
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        validators=[MinValueValidator(0)],
    )
    price_currency = models.CharField(
        _("price currency"), max_length=3, blank=True, help_text=_("ISO 4217 code, e.g. USD or CNY.")
    )
    fallback = optional_foreign_key(
        "self",
        _("fallback endpoint"),
        related_name="fallback_for",
        help_text=_(
            "Answers when this endpoint is unavailable (rate limited, server errors, timeouts); it may name "
            "its own fallback. Same organisation only."
        ),
    )
    is_default = models.BooleanField(
        _("organisation default"), default=False, help_text=_("Used by agents that name no model.")
    )
    active = models.BooleanField(_("active"), default=True)
    last_check = models.JSONField(_("last check"), null=True, blank=True, editable=False)
    last_checked_at = models.DateTimeField(_("last checked at"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("model endpoint")
        verbose_name_plural = _("model endpoints")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="unique_model_config_name"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"

    @property
    def headers(self) -> dict[str, str]:
        """The extra headers (decrypted), as name -> value."""
        return headers_parse(self.extra_headers or "")

    @property
    def header_names(self) -> list[str]:
        """The names of the extra headers (their values are secret)."""
        try:
            return sorted(self.headers)
        except ValidationError:
            return []

    def clean(self) -> None:
        """The base URL must pass the SSRF guard (the same check runs again on every call); the extra
        headers must be valid and leave the client's own headers alone; the role must fit the provider
        (:func:`model_config_role_problems`)."""
        errors: dict[str, list[ValidationError]] = {}
        if self.base_url:
            try:
                validate_model_endpoint_url(self.base_url)
            except ValidationError as exc:
                errors["base_url"] = exc.error_list
        if self.__dict__.get("extra_headers"):
            try:
                self.headers  # noqa: B018 - parsing is the check
            except ValidationError as exc:
                errors["extra_headers"] = exc.error_list
        if (problem := fallback_problem(self)) is not None:
            errors["fallback"] = [ValidationError(problem)]
        for name, problem in model_config_role_problems(
            role=self.role, provider=self.provider, base_url=self.base_url or "", is_default=self.is_default
        ).items():
            errors.setdefault(name, []).append(ValidationError(problem))
        if errors:
            raise ValidationError(errors)


class ExecutionMode(models.TextChoices):
    REACT = "react", _("ReAct")
    PLAN = "plan", _("Plan")
    AUTO = "auto", _("Automatic")


class Agent(OrgOwnedModel):
    """An assistant users chat with: instructions, a model and the connectors it may use."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("name"), max_length=100)
    description = models.CharField(_("description"), max_length=300, blank=True)
    instructions = models.TextField(_("instructions"), blank=True)
    model_config = optional_foreign_key(
        ModelConfig,
        _("model endpoint"),
        related_name="agents",
        help_text=_("Empty: the organisation's default endpoint, else the platform default."),
    )
    connectors = models.ManyToManyField(
        "connectors.Connector", verbose_name=_("connectors"), blank=True, related_name="agents"
    )
    skills = models.ManyToManyField(
        "agents.Skill",
        verbose_name=_("skills"),
        blank=True,
        related_name="agents",
        help_text=_("The organisation's skills this agent is told about and may read when it needs them."),
    )
    memory = models.BooleanField(
        _("memory"),
        default=False,
        help_text=_(
            "On: the agent is given what each person told it to keep in earlier conversations (only "
            "theirs) and may remember new facts and preferences they ask it to. Everyone sees, changes and "
            "deletes their own memories on their Memories page."
        ),
    )
    memory_extraction = models.BooleanField(
        _("note memories after each answer"),
        default=False,
        help_text=_(
            "With memory on: after each answer, the agent's model is asked once which lasting facts or "
            "preferences of the person the exchange holds, and keeps them. Its calls count in the budgets "
            "and the usage dashboard."
        ),
    )
    execution_mode = models.CharField(
        _("execution mode"), max_length=8, choices=ExecutionMode.choices, default=ExecutionMode.REACT
    )
    max_iterations = models.PositiveSmallIntegerField(
        _("maximum iterations"), default=50, validators=[MinValueValidator(1), MaxValueValidator(50)]
    )
    completion_check = models.BooleanField(_("completion checklist"), default=True)
    example_questions = models.JSONField(
        _("example questions"),
        default=list,
        blank=True,
        validators=[validate_example_questions],
        help_text=_("Offered to users in an empty conversation; one question per line, at most eight."),
    )
    active = models.BooleanField(_("active"), default=True)
    exposed_over_mcp = models.BooleanField(
        _("exposed over MCP"),
        default=False,
        help_text=_(
            "Offer this agent as a tool of the organisation's MCP server (/mcp/orgs/ and the "
            "organisation's slug), for MCP clients that authenticate with an API key of a member."
        ),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("agent")
        verbose_name_plural = _("agents")
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="unique_agent_name")]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """An agent chats through a chat model, never through an embedding or a rerank endpoint."""
        role = self.model_config.role if self.model_config_id is not None else None
        if role == ModelRole.EMBEDDING:
            raise ValidationError(
                {
                    "model_config": _(
                        "Choose a chat model: an embedding endpoint only turns text into vectors."
                    )
                }
            )
        if role == ModelRole.RERANK:
            raise ValidationError(
                {"model_config": _("Choose a chat model: a rerank endpoint only scores search passages.")}
            )


AGENT_SETTINGS: tuple[str, ...] = (
    "name",
    "description",
    "instructions",
    "model_config",
    "connectors",
    "skills",
    "memory",
    "memory_extraction",
    "execution_mode",
    "max_iterations",
    "completion_check",
    "example_questions",
    "active",
    "exposed_over_mcp",
)
"""The fields an agent's admin form and its API both set, in their order."""


class Conversation(OrgOwnedModel):
    """One user's chat with one agent."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="conversations",
    )
    agent = models.ForeignKey(
        Agent, verbose_name=_("agent"), on_delete=models.PROTECT, related_name="conversations"
    )
    title = models.CharField(_("title"), max_length=200, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("conversation")
        verbose_name_plural = _("conversations")
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["organization", "user", "-updated_at"])]

    def __str__(self) -> str:
        return self.title or str(self.id)


class RunStatus(models.TextChoices):
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    CANCELLED = "cancelled", _("Cancelled")
    FAILED = "failed", _("Failed")
    INTERRUPTED = "interrupted", _("Interrupted")
    PARKED = "parked", _("Waiting for a decision")


#: Statuses of a run that still owns its conversation: new messages become its follow-ups.
ACTIVE_RUN_STATUSES = (RunStatus.RUNNING, RunStatus.PARKED)


class Run(OrgOwnedModel):
    """One answer to one user message: the tool loop and the synthesised answer.

    Durable runs: a ``running`` run is held by one process through a lease (``lease_owner``, renewed
    until ``lease_expires_at``); a run whose lease lapsed is ``interrupted`` and may be resumed. A run
    waiting for a long human decision is ``parked`` on it (``parked_on``: the approval request) and
    holds no process. ``checkpoint`` is the engine state of the latest checkpoint (``checkpoint_seq``);
    the history it goes with is in the run's :class:`RunCheckpoint` rows.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="runs"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="+"
    )
    status = models.CharField(
        _("status"), max_length=12, choices=RunStatus.choices, default=RunStatus.RUNNING
    )
    stop_reason = models.CharField(_("stop reason"), max_length=40, blank=True)
    answer = models.TextField(_("answer"), blank=True)
    error = models.TextField(_("error"), blank=True)
    usage = models.JSONField(_("token usage"), default=dict, blank=True)
    iterations = models.PositiveIntegerField(_("iterations"), default=0)
    elapsed = models.FloatField(_("elapsed seconds"), default=0.0)
    started_at = models.DateTimeField(_("started at"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    lease_owner = models.CharField(_("held by process"), max_length=120, blank=True, default="")
    lease_expires_at = models.DateTimeField(_("lease expires at"), null=True, blank=True)
    checkpoint = models.JSONField(_("latest checkpoint"), default=dict, blank=True)
    checkpoint_seq = models.PositiveIntegerField(_("checkpoints"), default=0)
    parked_on = models.UUIDField(_("waiting for approval"), null=True, blank=True)
    resumes = models.PositiveSmallIntegerField(_("times resumed"), default=0)
    # The user's interface language when the run started (a language code; "": unknown): the language of
    # the run's stop and fallback messages, kept so a resumed run speaks it too.
    language = models.CharField(_("interface language"), max_length=16, blank=True, default="")

    class Meta:
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        ordering = ["-started_at"]
        constraints = [
            # At most one active run per conversation, enforced by the database itself.
            models.UniqueConstraint(
                fields=["conversation"],
                condition=models.Q(status__in=["running", "parked"]),
                name="one_active_run_per_conversation",
            ),
        ]
        indexes = [
            models.Index(fields=["user", "status"]),
            models.Index(fields=["status", "lease_expires_at"], name="run_status_lease"),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"


class RunCheckpoint(models.Model):
    """One checkpoint of a run, as the engine reported it: what changed since the previous one
    (``agents.engine.durable.checkpoint.Checkpoint.as_dict()``). Folded in ``seq`` order they give the run's
    whole checkpoint, so a long run's history is written once, never again every iteration."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    seq = models.PositiveIntegerField()
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("run checkpoint")
        verbose_name_plural = _("run checkpoints")
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="unique_run_checkpoint_seq")]

    def __str__(self) -> str:
        return f"{self.run_id}#{self.seq}"


class ToolCallStatus(models.TextChoices):
    STARTED = "started", _("Started")
    FINISHED = "finished", _("Finished")


class ToolCallEntry(models.Model):
    """The tool call ledger: a call of a run, recorded before it runs and when it ends, under its
    idempotency key ``<run_id>:<tool_call_id>``. A resumed run replaying the call reads this row
    instead of calling the connector again."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_call_entries")
    tool_call_id = models.CharField(_("tool call ID"), max_length=128)
    iteration = models.PositiveIntegerField(default=0)
    tool_name = models.CharField(_("tool"), max_length=64)
    status = models.CharField(max_length=8, choices=ToolCallStatus.choices, default=ToolCallStatus.STARTED)
    observation = models.TextField(blank=True)
    failed = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    outcome = models.CharField(max_length=16, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("tool call")
        verbose_name_plural = _("tool call ledger")
        constraints = [
            models.UniqueConstraint(fields=["run", "tool_call_id"], name="unique_tool_call_per_run")
        ]

    def __str__(self) -> str:
        return f"{self.run_id}:{self.tool_call_id} ({self.status})"


class MessageRole(models.TextChoices):
    USER = "user", _("User")
    ASSISTANT = "assistant", _("Assistant")
    SUMMARY = "summary", _("Summary of earlier messages")


class Message(models.Model):
    """The conversation's history as the engine sees it: user messages, answers and compaction summaries."""

    conversation = models.ForeignKey(
        Conversation, verbose_name=_("conversation"), on_delete=models.CASCADE, related_name="messages"
    )
    run = optional_foreign_key(Run, _("run"), related_name="messages")
    role = models.CharField(_("role"), max_length=12, choices=MessageRole.choices)
    content = models.TextField(_("content"))
    pinned = models.BooleanField(_("pinned"), default=False)
    injected = models.BooleanField(_("sent while the agent was working"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class RunEvent(models.Model):
    """One event of the persisted stream. ``seq`` increases by one per conversation."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="events")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveIntegerField()
    event = models.CharField(max_length=16)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("run event")
        verbose_name_plural = _("run events")
        ordering = ["conversation", "seq"]
        constraints = [models.UniqueConstraint(fields=["conversation", "seq"], name="unique_event_seq")]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.seq} {self.event}"

    def frame(self) -> dict[str, object]:
        """The websocket frame of DESIGN section 4."""
        return {"seq": self.seq, "run_id": str(self.run_id), "event": self.event, "data": self.data}


from agents.attachments.models import Attachment  # noqa: E402, F401 - the chat attachments belong to this app
from agents.knowledge.models import Chunk, ChunkVector, Document, KnowledgeBase  # noqa: E402, F401 - the knowledge models belong to this app
from agents.memory.models import Memory  # noqa: E402, F401 - the memories belong to this app
from agents.skills.models import Skill, SkillFile, SkillVersion  # noqa: E402, F401 - the skills belong to this app
from agents.usage.models import Budget, BudgetCounter, UsageRecord  # noqa: E402, F401 - the usage models belong to this app
