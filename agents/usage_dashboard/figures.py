"""All the dashboard's figures for one query, and their plain form (the API's body and the page's chart
data)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from agents.usage_dashboard.query import GROUP_BYS, DashboardQuery
from agents.usage_dashboard.selectors import (
    BucketRow,
    BudgetRow,
    GroupRow,
    RunRow,
    UsageFigures,
    budget_consumption,
    top_runs_by_cost,
    usage_by,
    usage_over_time,
    usage_totals,
)
from platform_core.models import Organization


@dataclass(frozen=True, slots=True)
class DashboardFigures:
    """The range's totals, its buckets, the breakdown by ``query.group_by`` (``groups``) and by each of
    user, agent and model endpoint, its costliest runs and the budgets' current consumption."""

    query: DashboardQuery
    totals: list[UsageFigures]
    over_time: list[BucketRow]
    groups: list[GroupRow]
    by_user: list[GroupRow]
    by_agent: list[GroupRow]
    by_model_endpoint: list[GroupRow]
    top_runs: list[RunRow]
    budgets: list[BudgetRow]


def dashboard_figures(*, organization: Organization, query: DashboardQuery) -> DashboardFigures:
    """Every figure of the dashboard, for the organisation's rows only."""
    breakdown = {name: usage_by(organization=organization, query=query, group_by=name) for name in GROUP_BYS}
    return DashboardFigures(
        query=query,
        totals=usage_totals(organization=organization, query=query),
        over_time=usage_over_time(organization=organization, query=query),
        groups=breakdown[query.group_by],
        by_user=breakdown["user"],
        by_agent=breakdown["agent"],
        by_model_endpoint=breakdown["model_endpoint"],
        top_runs=top_runs_by_cost(organization=organization, query=query),
        budgets=budget_consumption(organization=organization),
    )


def _money(value: Decimal | None) -> str | None:
    return None if value is None else f"{value.normalize():f}"


def figures_data(figures: UsageFigures) -> dict[str, Any]:
    return {
        "currency": figures.currency,
        "calls": figures.calls,
        "prompt_tokens": figures.prompt_tokens,
        "completion_tokens": figures.completion_tokens,
        "cached_tokens": figures.cached_tokens,
        "reasoning_tokens": figures.reasoning_tokens,
        "total_tokens": figures.total_tokens,
        "cost": _money(figures.cost),
    }


def _group(row: GroupRow) -> dict[str, Any]:
    return {"key": row.key, "label": row.label, **figures_data(row.figures)}


def budget_data(row: BudgetRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "scope": row.scope,
        "subject": row.subject,
        "metric": row.metric,
        "period": row.period,
        "period_start": row.period_start.isoformat(),
        "used": _money(row.used),
        "limit": _money(row.limit),
        "currency": row.currency,
        "percent": None if row.percent is None else round(row.percent, 2),
        "active": row.active,
    }


def dashboard_data(figures: DashboardFigures) -> dict[str, Any]:
    """The figures as JSON values (costs and budget amounts as decimal strings, exact)."""
    query = figures.query
    return {
        "period": query.period,
        "from": query.first.isoformat(),
        "to": query.last.isoformat(),
        "time_zone": str(query.zone),
        "group_by": query.group_by,
        "totals": [figures_data(row) for row in figures.totals],
        "over_time": [{"bucket": row.bucket, **figures_data(row.figures)} for row in figures.over_time],
        "groups": [_group(row) for row in figures.groups],
        "by_user": [_group(row) for row in figures.by_user],
        "by_agent": [_group(row) for row in figures.by_agent],
        "by_model_endpoint": [_group(row) for row in figures.by_model_endpoint],
        "top_runs": [
            {
                "run_id": row.run_id,
                "agent": row.agent,
                "user": row.user,
                "started_at": row.started_at.isoformat(),
                **figures_data(row.figures),
            }
            for row in figures.top_runs
        ],
        "budgets": [budget_data(row) for row in figures.budgets],
    }
