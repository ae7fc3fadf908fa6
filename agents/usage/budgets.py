"""The budgets of one run as plain values, their periods and their units.

A budget counts in whole units: tokens, or millionths of its currency (so the counters, in Redis or in
the database, are integers and every update is an exact integer addition).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_CEILING, Decimal
from zoneinfo import ZoneInfo

from django.db.models import Q, Sum

from agents.usage.models import Budget, BudgetMetric, BudgetPeriod, BudgetScope, UsageRecord
from platform_core.config_cache import config_cached

MICROS = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class BudgetLine:
    """One budget that applies to a run: ``limit`` in its units (see the module docstring)."""

    id: uuid.UUID
    organization_id: int
    name: str
    scope: str
    metric: str
    period: str
    limit: int
    limit_text: str
    currency: str
    time_zone: str
    warn_percent: int | None
    user_id: int | None = None
    agent_id: uuid.UUID | None = None

    @property
    def counts_cost(self) -> bool:
        return self.metric == BudgetMetric.COST

    def period_key(self, now: datetime) -> str:
        """The period ``now`` falls in, in the budget's time zone: ``d20261202`` or ``m202612``."""
        local = now.astimezone(ZoneInfo(self.time_zone))
        return local.strftime("d%Y%m%d" if self.period == BudgetPeriod.DAY else "m%Y%m")

    def units(self, *, tokens: int, cost: Decimal | None, currency: str) -> int:
        """What a call of ``tokens`` costing ``cost`` in ``currency`` counts in this budget (a cost in
        another currency, or unknown, counts nothing)."""
        if not self.counts_cost:
            return tokens
        if cost is None or currency.upper() != self.currency.upper():
            return 0
        return int((cost * MICROS).to_integral_value(rounding=ROUND_CEILING))

    def warn_at(self) -> int | None:
        """The units at which admins are warned (``None``: never)."""
        if self.warn_percent is None:
            return None
        return self.limit * self.warn_percent // 100


def period_bounds(line: BudgetLine, period: str) -> tuple[datetime, datetime]:
    """The start and end of a period key (``d20261202``, ``m202612``) in the budget's time zone."""
    zone = ZoneInfo(line.time_zone)
    if period[0] == "d":
        start = datetime.strptime(period[1:], "%Y%m%d").replace(tzinfo=zone)
        return start, (start + timedelta(days=1)).replace(tzinfo=zone)
    start = datetime.strptime(period[1:], "%Y%m").replace(tzinfo=zone)
    following = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return start, following


def period_used(line: BudgetLine, period: str) -> int:
    """What the stored usage rows count in ``line`` over ``period`` (sync): the start of a counter that
    did not exist yet (a budget made mid-period, Redis emptied)."""
    start, end = period_bounds(line, period)
    rows = UsageRecord.objects.for_org(line.organization_id).filter(created_at__gte=start, created_at__lt=end)
    if line.scope == BudgetScope.USER:
        rows = rows.filter(user_id=line.user_id)
    elif line.scope == BudgetScope.AGENT:
        rows = rows.filter(agent_id=line.agent_id)
    if not line.counts_cost:
        return int(rows.aggregate(n=Sum("total_tokens"))["n"] or 0)
    cost = rows.filter(currency=line.currency).aggregate(n=Sum("cost"))["n"]
    return line.units(tokens=0, cost=cost or Decimal(0), currency=line.currency)


def budget_line(budget: Budget) -> BudgetLine:
    """The plain values of ``budget``."""
    if budget.metric == BudgetMetric.COST:
        limit = int((Decimal(budget.limit) * MICROS).to_integral_value())
        text = f"{Decimal(budget.limit).normalize():f} {budget.currency}"
    else:
        limit = int(budget.limit)
        text = f"{limit} tokens"
    return BudgetLine(
        id=budget.pk,
        organization_id=budget.organization_id,
        name=budget.name,
        scope=budget.scope,
        metric=budget.metric,
        period=budget.period,
        limit=limit,
        limit_text=text,
        currency=budget.currency.upper(),
        time_zone=budget.time_zone or "UTC",
        warn_percent=budget.warn_percent,
        user_id=budget.user_id,
        agent_id=budget.agent_id,
    )


def budgets_for_run(
    *,
    organization_id: int,
    user_id: int | None,
    agent_id: uuid.UUID | None,
    config_version: int | None = None,
) -> list[BudgetLine]:
    """The active budgets of the organisation that count a run of ``user_id`` with ``agent_id`` (sync).

    With the organisation's ``config_version`` the organisation's active budgets are loaded once per
    version and process (every save or delete of a budget gives the organisation a new version), so a
    run of an organisation with no budgets costs no query.
    """
    if config_version is None:
        applies = Q(scope=BudgetScope.ORGANIZATION)
        if user_id is not None:
            applies |= Q(scope=BudgetScope.USER, user_id=user_id)
        if agent_id is not None:
            applies |= Q(scope=BudgetScope.AGENT, agent_id=agent_id)
        budgets = Budget.objects.for_org(organization_id).filter(applies, active=True).order_by("pk")
        return [budget_line(b) for b in budgets]
    lines = config_cached(
        ("organization", organization_id), config_version, "budgets", lambda: _active_budgets(organization_id)
    )
    return [line for line in lines if _counts_run(line, user_id, agent_id)]


def _active_budgets(organization_id: int) -> tuple[BudgetLine, ...]:
    budgets = Budget.objects.for_org(organization_id).filter(active=True).order_by("pk")
    return tuple(budget_line(b) for b in budgets)


def _counts_run(line: BudgetLine, user_id: int | None, agent_id: uuid.UUID | None) -> bool:
    if line.scope == BudgetScope.USER:
        return user_id is not None and line.user_id == user_id
    if line.scope == BudgetScope.AGENT:
        return agent_id is not None and line.agent_id == agent_id
    return line.scope == BudgetScope.ORGANIZATION
