"""The engine's :class:`~agents.engine.metering.ModelCallMeter` for one run: the budgets' guard rail
before each model call, one ``UsageRecord`` row after it (queued in the run's event batch).

Once a budget refused a call, every later call of the run is refused too: the run stops, and a smaller
call that would still fit does not slip in after the stop was decided.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Protocol

from django.utils import timezone

from agents.engine.completion import Usage
from agents.engine.metering import (
    BudgetRefusal,
    CallVerdict,
    ModelCall,
    ModelCallUsage,
    Proceed,
)
from agents.engine.run_writes import RunWrite
from agents.usage.budgets import BudgetLine
from agents.usage.counters import BudgetCounter, Claim, Exceeded, Reserved
from agents.usage.pricing import Prices
from agents.usage.rows import PendingUsage
from agents.usage.warnings import BudgetWarning

logger = logging.getLogger(__name__)


class UsageSink(Protocol):
    """Where the rows go (the run's :class:`~agents.runs.events.store.EventSink`)."""

    def usage(self, row: PendingUsage) -> None: ...

    def write_later(self, write: RunWrite[object]) -> None: ...


@dataclass(frozen=True, slots=True)
class EndpointAccount:
    """What the meter knows of an endpoint: its ``ModelConfig`` (``None``: the environment's or the demo
    model), its prices (``None``: the cost is unknown) and its name (kept on the usage rows)."""

    config_id: uuid.UUID | None
    prices: Prices | None
    name: str = ""


@dataclass(frozen=True, slots=True)
class UsageOwner:
    """Whose calls these are."""

    organization_id: int
    user_id: int | None
    agent_id: uuid.UUID | None
    run_id: uuid.UUID | None


class RunMeter:
    """Budgets and accounting of one run (see the module docstring)."""

    def __init__(
        self,
        *,
        owner: UsageOwner,
        endpoints: Mapping[str, EndpointAccount],
        budgets: Sequence[BudgetLine],
        counter: BudgetCounter | None,
        sink: UsageSink,
        clock: Callable[[], datetime] = timezone.now,
    ) -> None:
        self.owner = owner
        self.endpoints = dict(endpoints)
        self.budgets = tuple(budgets)
        self.counter = counter
        self.sink = sink
        self.clock = clock
        self.refusal: BudgetRefusal | None = None
        # Without budgets nothing is reserved: the engine need not estimate its calls.
        self.wants_estimates = bool(self.budgets) and counter is not None

    def _account(self, endpoint_id: str) -> EndpointAccount:
        return self.endpoints.get(endpoint_id) or EndpointAccount(None, None)

    async def before_model_call(self, call: ModelCall) -> CallVerdict:
        if self.refusal is not None:
            return self.refusal
        if not self.budgets or self.counter is None:
            return Proceed()
        prices = self._account(call.endpoint_id).prices
        most = prices.most_per_token() * call.estimated_tokens if prices is not None else None
        currency = prices.currency if prices is not None else ""
        now = self.clock()
        claims = [
            Claim(
                line,
                line.period_key(now),
                line.units(tokens=call.estimated_tokens, cost=most, currency=currency),
            )
            for line in self.budgets
        ]
        match await self.counter.reserve(claims):
            case Exceeded(line=line):
                self.refusal = BudgetRefusal(line.name, line.scope, line.metric, line.period, line.limit_text)
                logger.info(
                    "budget %s reached: model call refused",
                    line.id,
                    extra={"org_id": self.owner.organization_id, "run_id": str(self.owner.run_id)},
                )
                return self.refusal
            case Reserved() as reserved:
                return Proceed(reserved)
        raise TypeError("a counter answers Reserved or Exceeded")  # pragma: no cover - typed away

    async def after_model_call(self, report: ModelCallUsage) -> None:
        account = self._account(report.endpoint_id)
        usage = report.usage
        cost = account.prices.cost(usage) if account.prices is not None else None
        currency = account.prices.currency if account.prices is not None else ""
        if not report.failed:
            self.sink.usage(self._row(report, account, usage, cost, currency))
        reserved = report.reservation
        if isinstance(reserved, Reserved) and reserved.claims and self.counter is not None:
            units = [
                c.line.units(tokens=usage.total_tokens, cost=cost, currency=currency) for c in reserved.claims
            ]
            after = await self.counter.settle(reserved.claims, units)
            for claim, spent, used in zip(reserved.claims, units, after, strict=True):
                self._maybe_warn(claim, used - spent, used)

    def _row(
        self,
        report: ModelCallUsage,
        account: EndpointAccount,
        usage: Usage,
        cost: Decimal | None,
        currency: str,
    ) -> PendingUsage:
        owner = self.owner
        return PendingUsage(
            organization_id=owner.organization_id,
            user_id=owner.user_id,
            agent_id=owner.agent_id,
            model_config_id=account.config_id,
            run_id=owner.run_id,
            purpose=str(report.purpose),
            model=report.model[:200],
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cached_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            total_tokens=usage.total_tokens,
            estimated=usage.estimated,
            cost=cost,
            currency=currency,
            model_config_name=account.name[:200],
        )

    def _maybe_warn(self, claim: Claim, before: int, after: int) -> None:
        """The call that takes a budget across its warning threshold warns the admins (once per period:
        see :func:`~agents.usage.warnings.budget_warn`), in the next batch's transaction: off the call's
        path."""
        threshold = claim.line.warn_at()
        if threshold is None or not (before < threshold <= after):
            return
        line, period = claim.line, claim.period
        self.sink.write_later(BudgetWarning(line, period, after))
