"""``GET /api/v1/orgs/<slug>/usage/``: the organisation's figures, for its admins only."""

from __future__ import annotations

import pytest

from tests.agents.usage_dashboard.conftest import RANGE

pytestmark = pytest.mark.django_db


def url(slug: str) -> str:
    return f"/api/v1/orgs/{slug}/usage/"


def test_an_admin_gets_the_figures_of_the_rows(org, world, org_admin, client_for):
    response = client_for(org_admin).get(
        url("acme"), {**RANGE, "period": "week", "group_by": "model_endpoint"}
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["period"], body["from"], body["to"], body["group_by"]) == (
        "week",
        "2026-11-01",
        "2026-11-30",
        "model_endpoint",
    )
    assert [(b["bucket"], b["total_tokens"]) for b in body["over_time"]] == [
        ("2026-11-02", 4700),
        ("2026-11-09", 500),
        ("2026-11-16", 100),
    ]
    assert {(g["label"], g["total_tokens"]) for g in body["groups"]} == {
        ("gpt-big", 5200),
        ("local-free", 100),
    }
    usd = next(t for t in body["totals"] if t["currency"] == "USD")
    assert (usd["cost"], usd["calls"]) == ("0.052", 3)
    assert body["top_runs"][0] == {
        "run_id": str(world.run_big.pk),
        "agent": "Buyer",
        "user": "ada",
        "started_at": "2026-11-02T12:00:00+00:00",
        "currency": "USD",
        "calls": 2,
        "prompt_tokens": 4000,
        "completion_tokens": 700,
        "cached_tokens": 100,
        "reasoning_tokens": 0,
        "total_tokens": 4700,
        "cost": "0.047",
    }


@pytest.mark.cross_org("org-usage")
def test_an_admin_of_another_organisation_sees_none_of_its_figures(org, world, other_admin, client_for):
    client = client_for(other_admin)
    assert client.get(url("acme"), RANGE).status_code == 404
    own = client.get(url("globex"), RANGE).json()
    assert [t["total_tokens"] for t in own["totals"]] == [1_000_000]
    assert {r["run_id"] for r in own["top_runs"]} == {str(world.foreign_run.pk)}
    assert "Buyer" not in str(own) and "gpt-big" not in str(own)


def test_a_member_is_refused(org, world, member, client_for):
    assert client_for(member).get(url("acme"), RANGE).status_code == 403


def test_an_admin_here_but_a_member_there_is_refused_there(org, other_org, world, admin_of_both, client_for):
    client = client_for(admin_of_both)
    assert client.get(url("acme"), RANGE).status_code == 200
    assert client.get(url("globex"), RANGE).status_code == 403


def test_anonymous_callers_are_refused(org, world, api_client):
    assert api_client.get(url("acme")).status_code in (401, 403)


def test_bad_parameters_answer_400_with_reasons(org, org_admin, client_for):
    response = client_for(org_admin).get(url("acme"), {"period": "year", "group_by": "team"})
    assert response.status_code == 400
    assert set(response.json()) == {"period", "group_by"}


def test_the_schema_documents_the_usage_route(org_admin, client_for):
    schema = client_for(org_admin).get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/orgs/{org_slug}/usage/"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"period", "from", "to", "group_by"}
    response = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert response["$ref"].endswith("/UsageDashboard")
