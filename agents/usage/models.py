"""The usage models: one row per model call (:class:`UsageRecord`) and the limits on them (:class:`Budget`).

Imported by :mod:`agents.models`, so they belong to the ``agents`` app (migrations 0006 and 0007).
"""

from __future__ import annotations

import uuid

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from platform_core.model_fields import optional_foreign_key, optional_user_key
from platform_core.models import OrgOwnedModel, validate_time_zone


class CallPurpose(models.TextChoices):
    """Why a model call was made (the values of :class:`agents.engine.metering.CallPurpose`)."""

    TOOL_LOOP = "tool_loop", _("Tool loop")
    SYNTHESIS = "synthesis", _("Answer synthesis")
    PLANNER = "planner", _("Planner")
    ANALYSER = "analyser", _("Plan analyser")
    ROUTER = "router", _("Mode router")
    SELECTION = "selection", _("Tool selection")
    COMPACTION = "compaction", _("Context compaction")
    # Not an engine call: a knowledge base's passages or a search's query turned into vectors.
    EMBEDDING = "embedding", _("Embedding")
    # Not an engine call: a knowledge-base search's passages scored against its question.
    RERANK = "rerank", _("Rerank")
    # Not an engine call: the memories of a person noted after a run's answer (agents.memory.extraction).
    MEMORY = "memory", _("Memory notes")


class UsageRecord(OrgOwnedModel):
    """The tokens (and their cost, when the endpoint has prices) of ONE model call of a run.

    Written in the same batch as the run's events; ``cost`` is computed when the row is written, from the
    endpoint's prices at that moment (``None``: the endpoint has no prices). ``estimated``: the provider
    reported no usage, the tokens are the engine's estimate.
    """

    id = models.BigAutoField(primary_key=True)
    user = optional_user_key(_("user"))
    agent = optional_foreign_key("agents.Agent", _("agent"))
    model_config = optional_foreign_key("agents.ModelConfig", _("model endpoint"))
    run = optional_foreign_key("agents.Run", _("run"), related_name="usage_records")
    purpose = models.CharField(_("purpose"), max_length=16, choices=CallPurpose.choices)
    model = models.CharField(_("model name"), max_length=200, blank=True)
    # The endpoint's name when the call was made: the dashboard still names an endpoint deleted since.
    model_config_name = models.CharField(_("model endpoint name"), max_length=200, blank=True, default="")
    prompt_tokens = models.PositiveIntegerField(_("prompt tokens"), default=0)
    completion_tokens = models.PositiveIntegerField(_("completion tokens"), default=0)
    cached_tokens = models.PositiveIntegerField(_("cached prompt tokens"), default=0)
    reasoning_tokens = models.PositiveIntegerField(_("reasoning tokens"), default=0)
    total_tokens = models.PositiveIntegerField(_("total tokens"), default=0)
    estimated = models.BooleanField(_("estimated"), default=False)
    cost = models.DecimalField(_("cost"), max_digits=18, decimal_places=8, null=True, blank=True)
    currency = models.CharField(_("currency"), max_length=3, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    class Meta:
        verbose_name = _("usage record")
        verbose_name_plural = _("usage records")
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "created_at"], name="usage_org_time"),
            models.Index(fields=["organization", "user", "created_at"], name="usage_org_user_time"),
            models.Index(fields=["organization", "agent", "created_at"], name="usage_org_agent_time"),
            models.Index(fields=["organization", "model_config", "created_at"], name="usage_org_model_time"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} {self.total_tokens} tokens"


class BudgetScope(models.TextChoices):
    """Whose calls a budget counts."""

    ORGANIZATION = "organization", _("Organisation")
    USER = "user", _("User")
    AGENT = "agent", _("Agent")


class BudgetMetric(models.TextChoices):
    """What a budget counts."""

    TOKENS = "tokens", _("Tokens")
    COST = "cost", _("Cost")


class BudgetPeriod(models.TextChoices):
    """The window a budget counts in (a calendar day or month in the budget's time zone)."""

    DAY = "day", _("Day")
    MONTH = "month", _("Month")


class Budget(OrgOwnedModel):
    """A limit on the model calls of an organisation, one of its users or one of its agents: ``limit``
    tokens or ``limit`` of the organisation's currency per day or month (in ``time_zone``).

    Checked before every model call: a call that would go past it is not made and the run stops with
    ``budget_exceeded``. At ``warn_percent`` of the limit the organisation's admins are warned once per
    period (an audit entry, and a Feishu message when the organisation has a channel).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(_("name"), max_length=100)
    scope = models.CharField(_("applies to"), max_length=16, choices=BudgetScope.choices)
    user = optional_user_key(_("user"), on_delete=models.CASCADE)
    agent = optional_foreign_key("agents.Agent", _("agent"), on_delete=models.CASCADE)
    metric = models.CharField(_("counts"), max_length=8, choices=BudgetMetric.choices)
    period = models.CharField(_("period"), max_length=8, choices=BudgetPeriod.choices)
    limit = models.DecimalField(
        _("limit"),
        max_digits=18,
        decimal_places=6,
        validators=[MinValueValidator(0)],
        help_text=_("Tokens, or an amount in the currency below."),
    )
    currency = models.CharField(
        _("currency"), max_length=3, blank=True, help_text=_("For cost budgets: the endpoints' currency.")
    )
    time_zone = models.CharField(
        _("time zone"), max_length=64, default="UTC", validators=[validate_time_zone]
    )
    warn_percent = models.PositiveSmallIntegerField(
        _("warn at (%)"),
        null=True,
        blank=True,
        default=80,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text=_("Admins are warned when this share of the limit is used. Empty: no warning."),
    )
    active = models.BooleanField(_("active"), default=True)
    warned_period = models.CharField(_("last warned period"), max_length=16, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("budget")
        verbose_name_plural = _("budgets")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="unique_budget_name"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        """A user budget names a user, an agent budget an agent, an organisation budget neither; a cost
        budget names its currency."""
        errors: dict[str, ValidationError] = {}
        if self.scope == BudgetScope.USER and not self.user_id:
            errors["user"] = ValidationError(_("A user budget names the user."))
        if self.scope == BudgetScope.AGENT and not self.agent_id:
            errors["agent"] = ValidationError(_("An agent budget names the agent."))
        if self.scope != BudgetScope.USER and self.user_id:
            errors["user"] = ValidationError(_("Only a user budget names a user."))
        if self.scope != BudgetScope.AGENT and self.agent_id:
            errors["agent"] = ValidationError(_("Only an agent budget names an agent."))
        if self.metric == BudgetMetric.COST and not self.currency:
            errors["currency"] = ValidationError(_("A cost budget names its currency."))
        if errors:
            raise ValidationError(errors)


BUDGET_SETTINGS: tuple[str, ...] = (
    "name",
    "scope",
    "user",
    "agent",
    "metric",
    "period",
    "limit",
    "currency",
    "time_zone",
    "warn_percent",
    "active",
)
"""The fields a budget's admin form and its API both set, in their order."""


class BudgetCounter(models.Model):
    """What a budget counted in one period, when the database keeps the counts (no Redis): ``used`` by the
    calls made, ``reserved`` by the calls under way (``in_flight``), in the budget's units (tokens, or
    millionths of its currency)."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="counters")
    period = models.CharField(max_length=16)
    used = models.BigIntegerField(default=0)
    reserved = models.BigIntegerField(default=0)
    in_flight = models.IntegerField(default=0)

    class Meta:
        verbose_name = _("budget counter")
        verbose_name_plural = _("budget counters")
        constraints = [
            models.UniqueConstraint(fields=["budget", "period"], name="unique_budget_counter_period"),
        ]

    def __str__(self) -> str:
        return f"{self.budget_id} {self.period}: {self.used}"
