"""The dashboard's admin page and its CSV files: an org admin sees their organisation's figures only."""

from __future__ import annotations

import csv
import io

import pytest

from tests.agents.factories import BudgetFactory
from tests.agents.usage_dashboard.conftest import RANGE

pytestmark = pytest.mark.django_db


def page(slug: str) -> str:
    return f"/admin/usage-dashboard/{slug}/"


def test_the_admin_index_links_the_dashboard(client, org_admin):
    client.force_login(org_admin)
    response = client.get("/admin/")
    assert 'href="/admin/usage-dashboard/"' in response.content.decode()


def test_the_chooser_opens_the_only_organisation(client, org, org_admin):
    client.force_login(org_admin)
    response = client.get("/admin/usage-dashboard/")
    assert response.status_code == 302 and response["Location"] == page("acme")


def test_the_page_shows_the_figures_and_carries_the_chart_data(client, org, world, org_admin):
    client.force_login(org_admin)
    response = client.get(page("acme"), RANGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="usage-chart-tokens"' in html and "vendor/chartjs/chart.umd.min.js" in html
    assert 'id="usage-dashboard-data" type="application/json"' in html
    data = response.context["data"]
    assert [(b["bucket"], b["total_tokens"]) for b in data["over_time"]] == [
        ("2026-11-02", 1200),
        ("2026-11-03", 3500),
        ("2026-11-10", 500),
        ("2026-11-17", 100),
    ]
    assert {r["label"] for r in data["by_agent"]} == {"Buyer", "Helper"}
    assert "globex-model" not in html and "Spy" not in html


def test_the_page_has_no_inline_script(client, org, world, org_admin):
    client.force_login(org_admin)
    html = client.get(page("acme"), RANGE).content.decode()
    for chunk in html.split("<script")[1:]:
        opening = chunk.split(">", 1)[0]
        assert "src=" in opening or 'type="application/json"' in opening


@pytest.mark.cross_org("usage-dashboard", "usage-dashboard-csv")
def test_an_admin_of_another_organisation_gets_404(client, org, world, other_admin):
    client.force_login(other_admin)
    assert client.get(page("acme"), RANGE).status_code == 404
    assert client.get(page("acme") + "csv/by_user/", RANGE).status_code == 404
    own = client.get(page("globex"), RANGE)
    assert own.status_code == 200
    assert "Buyer" not in own.content.decode()


def test_a_member_cannot_open_the_page(client, org, world, member):
    client.force_login(member)
    response = client.get(page("acme"), RANGE)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_a_staff_member_who_is_no_admin_gets_404(client, org, world, admin_of_both, other_org):
    client.force_login(admin_of_both)
    assert client.get(page("acme"), RANGE).status_code == 200
    assert client.get(page("globex"), RANGE).status_code == 404


def test_bad_parameters_show_their_reasons_and_the_default_range(client, org, org_admin):
    client.force_login(org_admin)
    response = client.get(page("acme"), {"period": "year"})
    assert response.status_code == 200
    assert "period" in response.context["errors"]


def read_csv(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.content.decode())))


def test_csv_of_the_breakdown_by_user(client, org, world, org_admin):
    client.force_login(org_admin)
    response = client.get(page("acme") + "csv/by_user/", RANGE)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "usage-acme-by_user-2026-11-01-2026-11-30.csv" in response["Content-Disposition"]
    rows = read_csv(response)
    assert rows[0] == [
        "Name",
        "Currency",
        "Calls",
        "Prompt tokens",
        "Completion tokens",
        "Cached tokens",
        "Reasoning tokens",
        "Total tokens",
        "Cost",
    ]
    assert rows[1:] == [
        ["ada", "USD", "2", "4000", "700", "100", "0", "4700", "0.047"],
        ["mia", "USD", "1", "400", "100", "0", "30", "500", "0.005"],
        ["mia", "", "1", "50", "50", "0", "0", "100", ""],
    ]


def test_csv_over_time_by_week_and_top_runs(client, org, world, org_admin):
    client.force_login(org_admin)
    weeks = read_csv(client.get(page("acme") + "csv/over_time/", {**RANGE, "period": "week"}))
    assert [(r[0], r[7]) for r in weeks[1:]] == [
        ("2026-11-02", "4700"),
        ("2026-11-09", "500"),
        ("2026-11-16", "100"),
    ]
    runs = read_csv(client.get(page("acme") + "csv/top_runs/", RANGE))
    assert runs[0][:4] == ["Run", "Agent", "User", "Started at"]
    assert runs[1][0] == str(world.run_big.pk) and runs[1][-1] == "0.047"


def test_csv_of_budgets_and_names_that_look_like_formulas(client, org, world, org_admin):
    BudgetFactory(organization=org, name="=HYPERLINK(1)", scope="organization", agent=None, limit=1000)
    client.force_login(org_admin)
    rows = read_csv(client.get(page("acme") + "csv/budgets/", RANGE))
    assert rows[0][0] == "Name"
    assert rows[1][0] == "'=HYPERLINK(1)"


def test_an_unknown_table_is_404(client, org, org_admin):
    client.force_login(org_admin)
    assert client.get(page("acme") + "csv/secrets/").status_code == 404
