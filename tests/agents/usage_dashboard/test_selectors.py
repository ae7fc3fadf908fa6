"""The dashboard's aggregations match the organisation's usage rows, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from agents.usage_dashboard.query import DashboardQuery, QueryRefused, dashboard_query_parse
from agents.usage_dashboard.selectors import (
    budget_consumption,
    top_runs_by_cost,
    usage_by,
    usage_over_time,
    usage_totals,
)
from tests.agents.factories import BudgetFactory
from tests.agents.usage_dashboard.conftest import RANGE, usage

pytestmark = pytest.mark.django_db


def query(**params: str) -> DashboardQuery:
    parsed = dashboard_query_parse({**RANGE, **params})
    assert isinstance(parsed, DashboardQuery)
    return parsed


def test_totals_sum_the_organisations_rows_per_currency(org, world):
    totals = {t.currency: t for t in usage_totals(organization=org, query=query())}
    assert set(totals) == {"USD", ""}
    usd = totals["USD"]
    assert (usd.calls, usd.prompt_tokens, usd.completion_tokens, usd.total_tokens) == (3, 4400, 800, 5200)
    assert (usd.cached_tokens, usd.reasoning_tokens, usd.cost) == (100, 30, Decimal("0.052"))
    unpriced = totals[""]
    assert (unpriced.calls, unpriced.total_tokens, unpriced.cost) == (1, 100, None)


def test_days_weeks_and_months_bucket_the_rows(org, world):
    days = [(r.bucket, r.figures.total_tokens) for r in usage_over_time(organization=org, query=query())]
    assert days == [("2026-11-02", 1200), ("2026-11-03", 3500), ("2026-11-10", 500), ("2026-11-17", 100)]
    weeks = usage_over_time(organization=org, query=query(period="week"))
    # 2 Nov 2026 is a Monday: the first two rows share a week.
    assert [(r.bucket, r.figures.total_tokens) for r in weeks] == [
        ("2026-11-02", 4700),
        ("2026-11-09", 500),
        ("2026-11-16", 100),
    ]
    months = usage_over_time(organization=org, query=query(period="month"))
    assert [(r.bucket, r.figures.currency, r.figures.total_tokens) for r in months] == [
        ("2026-11-01", "", 100),
        ("2026-11-01", "USD", 5200),
    ]


def test_buckets_are_cut_in_the_sites_time_zone(org, world, settings):
    settings.TIME_ZONE = "Asia/Shanghai"
    late = datetime(2026, 11, 20, 17, 30, tzinfo=ZoneInfo("UTC"))  # 21 Nov 01:30 in Shanghai
    usage(org, user=None, agent=None, endpoint=None, run=None, when=late, prompt=7, completion=0)
    days = [r.bucket for r in usage_over_time(organization=org, query=query())]
    assert days[-1] == "2026-11-21"


def test_the_range_is_inclusive_of_its_last_day_and_excludes_the_rest(org, world):
    inside = usage_over_time(organization=org, query=query(**{"from": "2026-11-03", "to": "2026-11-10"}))
    assert [r.bucket for r in inside] == ["2026-11-03", "2026-11-10"]


def test_breakdowns_by_user_agent_and_endpoint(org, world, org_admin, member):
    by_user = {
        (r.label, r.figures.currency): r.figures.total_tokens
        for r in usage_by(organization=org, query=query(), group_by="user")
    }
    assert by_user == {("ada", "USD"): 4700, ("mia", "USD"): 500, ("mia", ""): 100}
    by_agent = [
        (r.label, r.figures.total_tokens) for r in usage_by(organization=org, query=query(), group_by="agent")
    ]
    assert by_agent[0] == ("Buyer", 4700)
    by_endpoint = {
        r.label: r.figures.total_tokens
        for r in usage_by(organization=org, query=query(), group_by="model_endpoint")
    }
    assert by_endpoint == {"gpt-big": 5200, "local-free": 100}
    assert "globex-model" not in by_endpoint


def test_rows_whose_agent_was_deleted_are_grouped_as_deleted(org, world):
    usage(
        org,
        user=None,
        agent=None,
        endpoint=None,
        run=None,
        when=datetime(2026, 11, 4, tzinfo=ZoneInfo("UTC")),
        prompt=1,
        completion=1,
    )
    labels = {r.label for r in usage_by(organization=org, query=query(), group_by="agent")}
    assert labels == {"Buyer", "Helper", "(deleted)"}


def test_top_runs_are_ordered_by_cost_and_never_another_organisations(org, world):
    runs = top_runs_by_cost(organization=org, query=query())
    assert [(r.run_id, r.figures.cost) for r in runs] == [
        (str(world.run_big.pk), Decimal("0.047")),
        (str(world.run_small.pk), Decimal("0.005")),
        (str(world.run_small.pk), None),
    ]
    assert runs[0].agent == "Buyer" and runs[0].user == "ada"


def test_budget_consumption_counts_the_current_period(org, world, member, other_org):
    now = datetime(2026, 11, 17, 18, tzinfo=ZoneInfo("UTC"))
    BudgetFactory(
        organization=org,
        name="Month tokens",
        scope="organization",
        agent=None,
        metric="tokens",
        period="month",
        limit=10000,
    )
    BudgetFactory(
        organization=org,
        name="Mia today",
        scope="user",
        agent=None,
        user=member,
        metric="tokens",
        period="day",
        limit=400,
    )
    BudgetFactory(
        organization=org,
        name="Buyer cost",
        scope="agent",
        agent=world.agent,
        metric="cost",
        period="month",
        limit=Decimal("0.5"),
        currency="usd",
    )
    BudgetFactory(
        organization=other_org,
        name="Globex",
        scope="organization",
        agent=None,
        metric="tokens",
        period="month",
        limit=5,
    )
    rows = {r.name: r for r in budget_consumption(organization=org, now=now)}
    assert set(rows) == {"Month tokens", "Mia today", "Buyer cost"}
    assert rows["Month tokens"].used == 5300
    assert (rows["Mia today"].used, rows["Mia today"].percent) == (100, 25.0)
    assert rows["Mia today"].period_start == datetime(2026, 11, 17, tzinfo=ZoneInfo("UTC"))
    assert (rows["Buyer cost"].used, rows["Buyer cost"].currency) == (Decimal("0.047"), "USD")
    assert rows["Buyer cost"].subject == "Buyer"


def test_budget_periods_start_in_the_budgets_time_zone(org, world):
    budget = BudgetFactory(
        organization=org, scope="organization", agent=None, period="day", time_zone="Asia/Shanghai"
    )
    now = datetime(2026, 11, 2, 17, tzinfo=ZoneInfo("UTC"))  # 3 Nov 01:00 in Shanghai
    (row,) = budget_consumption(organization=org, now=now)
    assert row.name == budget.name
    assert row.period_start == datetime(2026, 11, 3, tzinfo=ZoneInfo("Asia/Shanghai"))
    # 2 Nov 12:00 UTC was the day before in Shanghai; 3 Nov 12:00 UTC (20:00 there) is this day.
    assert row.used == 3500


def test_parameters_are_refused_with_reasons():
    refused = dashboard_query_parse({"period": "year", "from": "2026-12-05", "to": "nope", "group_by": "x"})
    assert isinstance(refused, QueryRefused)
    assert set(refused.errors) == {"period", "to", "group_by"}
    backwards = dashboard_query_parse({"from": "2026-12-05", "to": "2026-12-01"})
    assert isinstance(backwards, QueryRefused) and "from" in backwards.errors


def test_default_range_is_the_last_thirty_days():
    parsed = dashboard_query_parse({}, today=date(2026, 12, 2))
    assert isinstance(parsed, DashboardQuery)
    assert (parsed.first, parsed.last, parsed.period, parsed.group_by) == (
        date(2026, 11, 3),
        date(2026, 12, 2),
        "day",
        "user",
    )


def test_the_whole_dashboard_costs_the_same_queries_however_many_budgets(
    org, world, member, django_assert_num_queries
):
    from agents.usage_dashboard.figures import dashboard_figures

    BudgetFactory(organization=org, scope="organization", agent=None)
    with django_assert_num_queries(8):
        dashboard_figures(organization=org, query=query())
    BudgetFactory(organization=org, scope="user", agent=None, user=member, period="day")
    BudgetFactory(organization=org, scope="agent", agent=world.agent, metric="cost", currency="USD")
    with django_assert_num_queries(8):
        dashboard_figures(organization=org, query=query())
