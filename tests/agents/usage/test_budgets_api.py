"""The budgets API and admin, and the endpoints' prices: scoped to the organisation, writes audited."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Budget
from platform_core.models import AuditLog, Role
from tests.agents.factories import AgentFactory, ModelConfigFactory
from tests.eager_tasks import tasks_run_eagerly
from tests.factories import PASSWORD, member_of

pytestmark = pytest.mark.django_db


BUDGETS = "/api/v1/orgs/acme/budgets/"


def test_an_admin_creates_a_user_budget_and_the_write_is_audited(client_for, org_admin, member, org):
    response = client_for(org_admin).post(
        BUDGETS,
        {
            "name": "Mia daily",
            "scope": "user",
            "user": member.pk,
            "metric": "cost",
            "period": "day",
            "limit": "2.50",
            "currency": "usd",
            "time_zone": "Asia/Shanghai",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    budget = Budget.objects.unscoped().get(pk=response.json()["id"])
    assert (budget.organization_id, budget.user_id, budget.currency) == (org.pk, member.pk, "USD")
    assert budget.limit == Decimal("2.5") and budget.warn_percent == 80
    assert AuditLog.objects.filter(
        organization=org, action="budget.created", target_id=str(budget.pk)
    ).exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scope": "user"}, "user"),
        ({"scope": "agent"}, "agent"),
        ({"scope": "organization", "metric": "cost"}, "currency"),
        ({"scope": "organization", "time_zone": "Mars/Olympus"}, "time_zone"),
    ],
)
def test_a_budget_that_does_not_say_whose_or_in_what_is_refused(client_for, org_admin, org, body, field):
    data = {"name": "b", "metric": "tokens", "period": "month", "limit": 1000, **body}
    response = client_for(org_admin).post(BUDGETS, data, format="json")
    assert response.status_code == 400 and field in response.json()


def test_a_budget_cannot_name_another_organisations_user_or_agent(client_for, org_admin, org, other_org):
    outsider = member_of(other_org, Role.MEMBER, username="otto")
    foreign_agent = AgentFactory(organization=other_org)
    client = client_for(org_admin)
    for data in (
        {"scope": "user", "user": outsider.pk},
        {"scope": "agent", "agent": str(foreign_agent.pk)},
    ):
        body = {"name": "x", "metric": "tokens", "period": "day", "limit": 10, **data}
        response = client.post(BUDGETS, body, format="json")
        assert response.status_code == 400
    assert not Budget.objects.unscoped().exists()


@pytest.mark.cross_org("budget-list", "budget-detail")
def test_members_read_budgets_but_only_admins_write_and_other_orgs_see_nothing(
    client_for, member, org, other_admin, other_org
):
    mine = Budget.objects.create(
        organization=org, name="Org", scope="organization", metric="tokens", period="month", limit=10**6
    )
    Budget.objects.create(
        organization=other_org, name="Theirs", scope="organization", metric="tokens", period="day", limit=5
    )
    client = client_for(member)
    assert [b["name"] for b in client.get(BUDGETS).json()["results"]] == ["Org"]
    assert client.post(BUDGETS, {"name": "n"}, format="json").status_code == 403
    outsider = client_for(other_admin)
    assert outsider.get(f"{BUDGETS}{mine.pk}/").status_code == 404
    assert outsider.delete(f"/api/v1/orgs/globex/budgets/{mine.pk}/").status_code == 404
    assert Budget.objects.unscoped().filter(pk=mine.pk).exists()


def test_model_endpoints_carry_prices_in_the_api(client_for, org_admin, org):
    config = ModelConfigFactory(organization=org)
    response = client_for(org_admin).patch(
        f"/api/v1/orgs/acme/model-configs/{config.pk}/",
        {"price_input": "2", "price_cached_input": "0.5", "price_output": "8", "price_currency": "USD"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    config.refresh_from_db()
    assert (config.price_input, config.price_output, config.price_currency) == (Decimal(2), Decimal(8), "USD")
    assert response.json()["price_cached_input"] == "0.500000"
    assert ModelConfigFactory(organization=org).price_input is None  # empty by default: cost unknown


def test_the_budget_admin_lists_and_offers_only_the_admins_organisation(client, org, other_org):
    admin_user = member_of(org, Role.ADMIN, username="ada")
    admin_user.is_staff = True
    admin_user.save()
    AgentFactory(organization=other_org, name="Foreign agent")
    AgentFactory(organization=org, name="Own agent")
    Budget.objects.create(
        organization=other_org, name="Theirs", scope="organization", metric="tokens", period="day", limit=5
    )
    Budget.objects.create(
        organization=org, name="Ours", scope="organization", metric="tokens", period="day", limit=5
    )
    assert client.login(username="ada", password=PASSWORD)
    listing = client.get("/admin/agents/budget/").content.decode()
    assert "Ours" in listing and "Theirs" not in listing
    form = client.get("/admin/agents/budget/add/").content.decode()
    assert "Own agent" in form and "Foreign agent" not in form


@pytest.fixture
def celery_eager():
    with tasks_run_eagerly(propagate=True):
        yield


def test_a_budget_warning_posts_one_card_to_the_organisations_feishu_chat(
    org, fake_feishu, celery_eager, django_capture_on_commit_callbacks
):
    from agents.usage.budgets import budget_line
    from agents.usage.warnings import budget_warn
    from tests.fakes.feishu_cards import validate_card
    from tests.hooks.factories import FeishuChannelFactory

    FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url, default_chat_id="oc_admins")
    budget = Budget.objects.create(
        organization=org,
        name="Org monthly",
        scope="organization",
        metric="tokens",
        period="month",
        limit=1000,
    )
    # when the threshold is crossed (twice, by two processes), in the committed transaction's wake
    with django_capture_on_commit_callbacks(execute=True):
        assert budget_warn(line=budget_line(budget), period="m202612", used=850) is True
        assert budget_warn(line=budget_line(budget), period="m202612", used=900) is False

    # then one audit entry and one card in the channel's default chat name the budget and its use
    assert AuditLog.objects.filter(organization=org, action="budget.warning").count() == 1
    assert [m.chat_id for m in fake_feishu.sent] == ["oc_admins"]
    assert validate_card(fake_feishu.sent[0].card) == []
    assert "Org monthly" in str(fake_feishu.sent[0].card) and "850 / 1000" in str(fake_feishu.sent[0].card)
