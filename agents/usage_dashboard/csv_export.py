"""The dashboard's tables as CSV files (one table a file; the header row translated)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _

from agents.usage_dashboard.figures import DashboardFigures, budget_data, dashboard_data

_FIGURE_COLUMNS = [
    "currency",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cost",
]
# table -> (its first columns, where its rows are in dashboard_data)
TABLES: dict[str, tuple[list[str], str]] = {
    "over_time": (["bucket"], "over_time"),
    "by_user": (["label"], "by_user"),
    "by_agent": (["label"], "by_agent"),
    "by_model_endpoint": (["label"], "by_model_endpoint"),
    "top_runs": (["run_id", "agent", "user", "started_at"], "top_runs"),
}
BUDGET_COLUMNS = [
    "name",
    "scope",
    "subject",
    "metric",
    "period",
    "period_start",
    "used",
    "limit",
    "currency",
    "percent",
]


def _headers() -> dict[str, str]:
    return {
        "bucket": _("Period start"),
        "label": _("Name"),
        "run_id": _("Run"),
        "agent": _("Agent"),
        "user": _("User"),
        "started_at": _("Started at"),
        "currency": _("Currency"),
        "calls": _("Calls"),
        "prompt_tokens": _("Prompt tokens"),
        "completion_tokens": _("Completion tokens"),
        "cached_tokens": _("Cached tokens"),
        "reasoning_tokens": _("Reasoning tokens"),
        "total_tokens": _("Total tokens"),
        "cost": _("Cost"),
        "name": _("Name"),
        "scope": _("Applies to"),
        "subject": _("Whose"),
        "metric": _("Counts"),
        "period": _("Period"),
        "period_start": _("Period start"),
        "used": _("Used"),
        "limit": _("Limit"),
        "percent": _("Used (%)"),
    }


def csv_tables() -> tuple[str, ...]:
    """The names of the tables that export (``budgets`` too)."""
    return (*TABLES, "budgets")


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    # A spreadsheet runs a cell that starts like a formula; names come from admins and users.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(text) else text


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def dashboard_csv(*, figures: DashboardFigures, table: str) -> str:
    """The CSV text of ``table`` (one of :func:`csv_tables`)."""
    headers = _headers()
    rows: list[dict[str, Any]]
    columns: list[str]
    if table == "budgets":
        columns = BUDGET_COLUMNS
        rows = [budget_data(row) for row in figures.budgets]
    else:
        first, key = TABLES[table]
        columns = first + _FIGURE_COLUMNS
        rows = dashboard_data(figures)[key]
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([headers[c] for c in columns])
    pick: Callable[[dict[str, Any]], list[str]] = lambda row: [_cell(row.get(c)) for c in columns]  # noqa: E731
    writer.writerows(pick(row) for row in rows)
    return out.getvalue()
