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


def test_a_deleted_endpoint_shows_by_the_name_it_had(client, org, world, org_admin):
    # given usage of two endpoints, one of them since deleted: its rows kept its name (newer rows) or only
    # the model's name (rows written before endpoint names were kept)
    from agents.usage.models import UsageRecord
    from tests.agents.usage_dashboard.conftest import at, usage

    usage(
        org, user=org_admin, agent=world.agent, endpoint=world.cheap_endpoint, run=world.run_big,
        when=at(20), prompt=70, completion=7, model_config_name="local-free",
    )  # fmt: skip
    usage(
        org, user=org_admin, agent=world.agent, endpoint=None, run=world.run_big,
        when=at(21), prompt=50, completion=5, model="qwen-old",
    )  # fmt: skip
    UsageRecord.objects.unscoped().filter(model_config=world.cheap_endpoint).update(
        model_config_name="local-free"
    )
    world.cheap_endpoint.delete()
    client.force_login(org_admin)

    # when the admin opens the dashboard
    response = client.get(page("acme"), RANGE)

    # then the deleted endpoint is named, marked deleted, and never a bare "(deleted)"
    labels = {row["label"] for row in response.context["data"]["by_model_endpoint"]}
    assert labels == {"gpt-big", "local-free (deleted)", "qwen-old (deleted)"}
    assert "<td>(deleted)</td>" not in response.content.decode()


def test_times_show_formatted_in_the_organisations_time_zone(client, org, world, org_admin):
    # given an organisation in Shanghai whose costliest run started at 12:00:00.123456 UTC on 2 November
    from agents.usage.models import UsageRecord
    from tests.agents.usage_dashboard.conftest import at

    org.time_zone = "Asia/Shanghai"
    org.save(update_fields=["time_zone"])
    UsageRecord.objects.unscoped().filter(run=world.run_big, created_at=at(2)).update(
        created_at=at(2).replace(microsecond=123456)
    )
    BudgetFactory(organization=org, name="Monthly", time_zone="Asia/Shanghai")
    client.force_login(org_admin)

    # when the admin opens the dashboard
    html = client.get(page("acme"), RANGE).content.decode()

    # then the run's start reads in Shanghai time, without microseconds or a raw ISO timestamp (in what the
    # page shows: the charts' JSON data keeps ISO values)
    shown = html.split('id="usage-dashboard-data"')[0]
    assert "2026-11-02 20:00 CST" in shown
    assert ".123456" not in shown and "T12:00:00" not in shown and "+00:00" not in shown
    # and the budget's period starts at midnight in its own time zone
    assert "-01 00:00 CST" in shown and "+08:00" not in shown
