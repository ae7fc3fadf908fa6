"""A usage row waiting for the event writer's next batch (the columns of a ``UsageRecord``)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class PendingUsage:
    """One model call's ``UsageRecord``, queued with the run's events (see :meth:`EventSink.usage`)."""

    organization_id: int
    user_id: int | None
    agent_id: uuid.UUID | None
    model_config_id: uuid.UUID | None
    run_id: uuid.UUID | None
    purpose: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    total_tokens: int
    estimated: bool
    cost: Decimal | None
    currency: str
    model_config_name: str = ""

    def values(self) -> tuple[object, ...]:
        """The values of :data:`USAGE_COLUMNS` but ``created_at``, in order."""
        return (
            self.organization_id,
            self.user_id,
            self.agent_id,
            self.model_config_id,
            self.run_id,
            self.purpose,
            self.model,
            self.prompt_tokens,
            self.completion_tokens,
            self.cached_tokens,
            self.reasoning_tokens,
            self.total_tokens,
            self.estimated,
            self.cost,
            self.currency,
            self.model_config_name,
        )


USAGE_COLUMNS = (
    "organization",
    "user",
    "agent",
    "model_config",
    "run",
    "purpose",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "total_tokens",
    "estimated",
    "cost",
    "currency",
    "model_config_name",
    "created_at",
)
# The PostgreSQL array types of the columns, for the batch statement's ``unnest``.
USAGE_PG_TYPES = (
    "bigint",
    "integer",
    "uuid",
    "uuid",
    "uuid",
    "varchar",
    "varchar",
    "integer",
    "integer",
    "integer",
    "integer",
    "integer",
    "boolean",
    "numeric",
    "varchar",
    "varchar",
    "timestamptz",
)
