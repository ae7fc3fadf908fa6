"""The dashboard's figures, read from the organisation's usage rows: every function takes the organisation
and reads only its rows (and budgets).

Buckets are cut with Django's ``Trunc`` functions in the dashboard's time zone, on SQLite as on PostgreSQL
(https://docs.djangoproject.com/en/5.2/ref/models/database-functions/#trunc). A cost is summed per
currency: a row per (bucket or key, currency), so figures of two currencies are never added together;
rows of endpoints without prices have no currency and no cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.db.models import Case, CharField, Count, F, Min, Q, QuerySet, Sum, Value, When
from django.db.models.functions import Coalesce, NullIf, TruncDay, TruncMonth, TruncWeek
from django.utils import timezone
from django.utils.translation import gettext as _

from agents.usage.models import Budget, BudgetMetric, BudgetPeriod, BudgetScope, UsageRecord
from agents.usage_dashboard.query import DashboardQuery, GroupBy, Period
from platform_core.models import Organization

TOP_RUNS = 10
_TRUNC = {"day": TruncDay, "week": TruncWeek, "month": TruncMonth}
# group_by -> (the key's column, the label's column)
_GROUPS: dict[GroupBy, tuple[str, str]] = {
    "user": ("user_id", "user__username"),
    "agent": ("agent_id", "agent__name"),
    "model_endpoint": ("model_config_id", "model_config__name"),
}


@dataclass(frozen=True, slots=True)
class UsageFigures:
    """Sums over some usage rows of one currency (``""``, ``cost`` ``None``: rows without prices)."""

    currency: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost: Decimal | None


@dataclass(frozen=True, slots=True)
class BucketRow:
    """The usage of one day, week or month (``bucket``: its first day, ``YYYY-MM-DD``)."""

    bucket: str
    figures: UsageFigures


@dataclass(frozen=True, slots=True)
class GroupRow:
    """The usage of one user, agent or model endpoint (``key`` ``None``: rows whose one was deleted)."""

    key: str | None
    label: str
    figures: UsageFigures


@dataclass(frozen=True, slots=True)
class RunRow:
    """One of the costliest runs."""

    run_id: str
    agent: str
    user: str
    started_at: datetime
    figures: UsageFigures


@dataclass(frozen=True, slots=True)
class BudgetRow:
    """A budget's consumption in its current period: ``used`` of ``limit`` (tokens or ``currency``)."""

    id: str
    name: str
    scope: str
    subject: str
    metric: str
    period: str
    period_start: datetime
    used: Decimal
    limit: Decimal
    currency: str
    active: bool

    @property
    def percent(self) -> float | None:
        """``used`` as a percentage of ``limit`` (``None`` for a zero limit)."""
        return float(self.used * 100 / self.limit) if self.limit else None


_SUMS: dict[str, Any] = {
    "calls": Count("id"),
    "prompt": Sum("prompt_tokens"),
    "completion": Sum("completion_tokens"),
    "cached": Sum("cached_tokens"),
    "reasoning": Sum("reasoning_tokens"),
    "total": Sum("total_tokens"),
    "cost_sum": Sum("cost"),
}


def _figures(row: dict[str, Any]) -> UsageFigures:
    return UsageFigures(
        currency=row["currency"] or "",
        calls=row["calls"],
        prompt_tokens=row["prompt"] or 0,
        completion_tokens=row["completion"] or 0,
        cached_tokens=row["cached"] or 0,
        reasoning_tokens=row["reasoning"] or 0,
        total_tokens=row["total"] or 0,
        cost=row["cost_sum"],
    )


def usage_rows_in_range(*, organization: Organization, query: DashboardQuery) -> QuerySet[UsageRecord]:
    """The organisation's usage rows created in the query's range."""
    return UsageRecord.objects.filter(
        organization=organization, created_at__gte=query.start, created_at__lt=query.end
    )


def usage_totals(*, organization: Organization, query: DashboardQuery) -> list[UsageFigures]:
    """The range's totals, one per currency."""
    rows = usage_rows_in_range(organization=organization, query=query)
    sums = rows.values("currency").annotate(**_SUMS).order_by("currency")
    return [_figures(row) for row in sums]


def usage_over_time(
    *, organization: Organization, query: DashboardQuery, period: Period | None = None
) -> list[BucketRow]:
    """The range's usage per day, week (from Monday) or month, oldest first; empty buckets are left out."""
    trunc = _TRUNC[period or query.period]
    rows = usage_rows_in_range(organization=organization, query=query)
    sums = (
        rows.annotate(bucket=trunc("created_at", tzinfo=query.zone))
        .values("bucket", "currency")
        .annotate(**_SUMS)
        .order_by("bucket", "currency")
    )
    return [BucketRow(bucket=_day(row["bucket"], query.zone), figures=_figures(row)) for row in sums]


def _day(value: Any, zone: ZoneInfo) -> str:
    if isinstance(value, datetime):
        return value.astimezone(zone).date().isoformat()
    return value.isoformat()


# A deleted endpoint's rows are told apart by the name it had (kept on the row), else by their model's name
# (rows written before the endpoint's name was kept); the rows of a live endpoint are one group whatever
# names it had.
_GONE_ENDPOINT_NAME = Case(
    When(
        model_config__isnull=True,
        then=Coalesce(NullIf(F("model_config_name"), Value("")), F("model")),
    ),
    default=Value(""),
    output_field=CharField(),
)


def usage_by(
    *, organization: Organization, query: DashboardQuery, group_by: GroupBy | None = None
) -> list[GroupRow]:
    """The range's usage per user, agent or model endpoint, most tokens first. A deleted user or agent is
    "(deleted)"; a deleted endpoint is named by the name it had, "name (deleted)"."""
    key, label = _GROUPS[group_by or query.group_by]
    rows = usage_rows_in_range(organization=organization, query=query)
    columns = [key, label, "currency"]
    if key == "model_config_id":
        rows = rows.annotate(gone_name=_GONE_ENDPOINT_NAME)
        columns.append("gone_name")
    sums = rows.values(*columns).annotate(**_SUMS).order_by(F("total").desc(), label, *columns[2:])
    return [
        GroupRow(
            key=None if row[key] is None else str(row[key]),
            label=row[label] or _deleted_label(row.get("gone_name") or ""),
            figures=_figures(row),
        )
        for row in sums
    ]


def _deleted_label(name: str) -> str:
    return _("%(name)s (deleted)") % {"name": name} if name else _("(deleted)")


def top_runs_by_cost(
    *, organization: Organization, query: DashboardQuery, limit: int = TOP_RUNS
) -> list[RunRow]:
    """The range's costliest runs (then those with most tokens), per currency."""
    rows = usage_rows_in_range(organization=organization, query=query).filter(run__isnull=False)
    sums = (
        rows.values("run_id", "currency")
        .annotate(
            **_SUMS, started=Min("created_at"), agent_name=Min("agent__name"), username=Min("user__username")
        )
        .order_by(F("cost_sum").desc(nulls_last=True), F("total").desc(), "run_id")[:limit]
    )
    return [
        RunRow(
            run_id=str(row["run_id"]),
            agent=row["agent_name"] or _("(deleted)"),
            user=row["username"] or _("(deleted)"),
            started_at=row["started"],
            figures=_figures(row),
        )
        for row in sums
    ]


def budget_period_bounds(*, budget: Budget, now: datetime) -> tuple[datetime, datetime]:
    """The start and end of the day or month ``now`` falls in, in the budget's time zone."""
    local = now.astimezone(ZoneInfo(budget.time_zone or "UTC"))
    if budget.period == BudgetPeriod.DAY:
        first = local.date()
        after = first + timedelta(days=1)
    else:
        first = local.date().replace(day=1)
        after = (first + timedelta(days=32)).replace(day=1)
    return (
        datetime.combine(first, time.min, tzinfo=local.tzinfo),
        datetime.combine(after, time.min, tzinfo=local.tzinfo),
    )


def _budget_subject(budget: Budget) -> str:
    if budget.scope == BudgetScope.USER:
        return budget.user.get_username() if budget.user else ""
    if budget.scope == BudgetScope.AGENT:
        return budget.agent.name if budget.agent else ""
    return _("Whole organisation")


def _budget_rows_filter(*, budget: Budget, start: datetime, end: datetime) -> Q:
    """The usage rows that count against ``budget`` in the period from ``start`` to ``end``."""
    counted = Q(created_at__gte=start, created_at__lt=end)
    if budget.scope == BudgetScope.USER:
        counted &= Q(user_id=budget.user_id)
    elif budget.scope == BudgetScope.AGENT:
        counted &= Q(agent_id=budget.agent_id)
    if budget.metric == BudgetMetric.COST:
        counted &= Q(currency__iexact=budget.currency)
    return counted


def budget_consumption(*, organization: Organization, now: datetime | None = None) -> list[BudgetRow]:
    """Each budget of the organisation with what its current period's usage rows count against it
    (tokens, or the cost of the calls in the budget's currency): two queries, however many budgets."""
    moment = now or timezone.now()
    budgets = list(
        Budget.objects.filter(organization=organization).select_related("user", "agent").order_by("name")
    )
    if not budgets:
        return []
    bounds = [budget_period_bounds(budget=budget, now=moment) for budget in budgets]
    sums = {
        f"b{i}": Sum(
            "cost" if budget.metric == BudgetMetric.COST else "total_tokens",
            filter=_budget_rows_filter(budget=budget, start=start, end=end),
        )
        for i, (budget, (start, end)) in enumerate(zip(budgets, bounds, strict=True))
    }
    # Only the rows of the earliest period start onwards are read.
    earliest = min(start for start, _ in bounds)
    used = UsageRecord.objects.filter(organization=organization, created_at__gte=earliest).aggregate(**sums)
    return [
        BudgetRow(
            id=str(budget.pk),
            name=budget.name,
            scope=budget.scope,
            subject=_budget_subject(budget),
            metric=budget.metric,
            period=budget.period,
            period_start=start,
            used=Decimal(used[f"b{i}"] or 0),
            limit=Decimal(budget.limit),
            currency=budget.currency.upper() if budget.metric == BudgetMetric.COST else "",
            active=budget.active,
        )
        for i, (budget, (start, _end)) in enumerate(zip(budgets, bounds, strict=True))
    ]
