"""The usage dashboard in Debian's chromium under the strict policy: the vendored Chart.js draws its four
charts from the page's figures, the tables match them and a CSV downloads; the screenshot goes to
docs/screenshots/usage-dashboard.png (the README shows it)."""

from __future__ import annotations

import re

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import ROOT, E2EServer

pytestmark = pytest.mark.e2e

ORG = "usage-org"
OWNER = "usage-uma"
SCREENSHOT = ROOT / "docs" / "screenshots" / "usage-dashboard.png"


def build_usage_world() -> dict[str, str]:
    """An organisation with three weeks of usage rows of two users, two agents and two endpoints, and two
    budgets (run against the e2e server's database)."""
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from platform_core.models import Role
    from tests.factories import OrganizationFactory, member_of

    org = OrganizationFactory(slug=ORG, name="Usage Ltd")
    owner = member_of(org, Role.OWNER, username=OWNER)
    analyst = member_of(org, Role.MEMBER, username="usage-ivan")
    # Only once tests.factories is loaded: it imports the agents' factories itself.
    from tests.agents.factories import (
        AgentFactory,
        BudgetFactory,
        ConversationFactory,
        ModelConfigFactory,
        RunFactory,
    )
    from tests.agents.usage_dashboard.conftest import usage

    buyer = AgentFactory(organization=org, name="Purchasing")
    helpdesk = AgentFactory(organization=org, name="Helpdesk")
    big = ModelConfigFactory(organization=org, name="gpt-4.1")
    small = ModelConfigFactory(organization=org, name="qwen-plus")
    now = timezone.now()
    total = 0
    for day in range(21):
        for n, (user, agent, endpoint, price) in enumerate(
            [(owner, buyer, big, Decimal("0.000008")), (analyst, helpdesk, small, Decimal("0.000002"))]
        ):
            run = RunFactory(conversation=ConversationFactory(organization=org, user=user, agent=agent))
            prompt = 2000 + 350 * ((day * 7 + n * 3) % 11)
            completion = 300 + 90 * ((day * 5 + n) % 7)
            total += prompt + completion
            usage(
                org,
                user=user,
                agent=agent,
                endpoint=endpoint,
                run=run,
                when=now - timedelta(days=day, hours=1),
                prompt=prompt,
                completion=completion,
                cost=str((prompt + completion) * price),
                currency="USD",
            )
    BudgetFactory(
        organization=org,
        name="Monthly tokens",
        scope="organization",
        agent=None,
        period="month",
        limit=400000,
    )
    BudgetFactory(
        organization=org, name="Helpdesk cost", agent=helpdesk, metric="cost", limit=1, currency="USD"
    )
    return {"total": str(total)}


@pytest.fixture(scope="module")
def usage_world(e2e_server: E2EServer) -> dict[str, str]:
    return e2e_server.build("tests.e2e.test_usage_dashboard:build_usage_world")


@pytest.fixture
def admin_page(signed_in_page, usage_world):
    return signed_in_page(OWNER, next="/admin/", width=1366, height=1000, accept_downloads=True)


# Counts the canvas's pixels that are not transparent (what the chart drew).
DRAWN_PIXELS = """(id) => {
  const canvas = document.getElementById(id);
  const pixels = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
  let drawn = 0;
  for (let i = 3; i < pixels.length; i += 4) { if (pixels[i] > 0) { drawn += 1; } }
  return drawn;
}"""

DATASETS = """(id) => {
  const chart = window.Chart.getChart(document.getElementById(id));
  return chart.data.datasets.map((d) => ({label: d.label, points: d.data.length, sum: d.data.reduce((a, b) => a + Number(b || 0), 0)}));
}"""


def test_the_dashboard_draws_its_charts_from_the_rows(admin_page, e2e_server, usage_world):
    page, errors = admin_page
    page.click("#usage-dashboard-link a")
    page.wait_for_url(f"**/admin/usage-dashboard/{ORG}/")
    expect(page.locator("#usage-dashboard")).to_have_attribute("data-charts-drawn", "4")

    tokens = page.evaluate(DATASETS, "usage-chart-tokens")
    assert [d["label"] for d in tokens] == ["Prompt tokens", "Completion tokens"]
    assert tokens[0]["sum"] + tokens[1]["sum"] == int(usage_world["total"])
    assert tokens[0]["points"] >= 21
    (cost,) = page.evaluate(DATASETS, "usage-chart-cost")
    assert cost["label"] == "Cost (USD)" and cost["sum"] > 0
    (endpoints,) = page.evaluate(DATASETS, "usage-chart-endpoints")
    assert endpoints["points"] == 2 and endpoints["sum"] == int(usage_world["total"])
    (budgets,) = page.evaluate(DATASETS, "usage-chart-budgets")
    assert budgets["points"] == 2
    for canvas in ("usage-chart-tokens", "usage-chart-cost", "usage-chart-endpoints", "usage-chart-budgets"):
        assert page.evaluate(DRAWN_PIXELS, canvas) > 500, canvas

    expect(page.locator("#usage-table-by_agent tbody tr")).to_have_count(2)
    expect(page.locator("#usage-table-top_runs tbody tr")).to_have_count(10)
    # times read "YYYY-MM-DD HH:MM <zone>" in the organisation's zone: never raw ISO text with microseconds
    started = page.locator("#usage-table-top_runs tbody tr td:nth-child(4)").all_inner_texts()
    assert started and all(re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} \S+", text) for text in started)
    period_starts = page.locator("#usage-table-budgets tbody tr td:nth-child(4)").all_inner_texts()
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2} 00:00 \S+", text) for text in period_starts)
    with page.expect_download() as download_info:
        page.locator("#usage-table-by_model_endpoint + .usage-csv a").click()
    download = download_info.value
    assert download.suggested_filename.startswith(f"usage-{ORG}-by_model_endpoint-")
    lines = open(download.path(), encoding="utf-8").read().splitlines()
    assert lines[0].startswith("Name,Currency,Calls") and len(lines) == 3

    page.select_option("select[name=period]", "week")
    page.click(".usage-filter input[type=submit]")
    expect(page.locator("#usage-dashboard")).to_have_attribute("data-charts-drawn", "4")
    weekly = page.evaluate(DATASETS, "usage-chart-tokens")
    assert 3 <= weekly[0]["points"] <= 5
    assert weekly[0]["sum"] + weekly[1]["sum"] == int(usage_world["total"])
    assert errors == []

    page.select_option("select[name=period]", "day")
    page.click(".usage-filter input[type=submit]")
    expect(page.locator("#usage-dashboard")).to_have_attribute("data-charts-drawn", "4")
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))  # the viewport: the filter, the totals and the four charts
    assert SCREENSHOT.stat().st_size > 20000
