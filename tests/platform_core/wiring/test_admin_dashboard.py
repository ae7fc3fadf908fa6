"""The admin's home page: one card per organisation the signed-in admin administers, with its pending
approvals, read-only switch, budgets at their warning level and failing connectors.

The figures come from :mod:`platform_core.wiring.admin_dashboard`; the page is Django's admin index.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from agents.usage.models import UsageRecord
from connectors.circuit import breaker_for, reset_breakers
from platform_core.models import Role
from platform_core.wiring.admin_dashboard import org_dashboard_cards
from tests.agents.factories import BudgetFactory
from tests.factories import ConnectorCallLogFactory, ConnectorFactory, OrganizationFactory, member_of
from tests.hooks.factories import ApprovalRequestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_breakers():
    reset_breakers()
    yield
    reset_breakers()


def _usage(org, tokens: int) -> None:
    UsageRecord.objects.create(
        organization=org, purpose="tool_loop", prompt_tokens=tokens, total_tokens=tokens, currency="USD"
    )


def _troubled(org, label: str) -> dict[str, object]:
    """Give ``org`` one of everything the dashboard reports, each named with ``label``."""
    now = timezone.now()
    old = ApprovalRequestFactory(organization=org, tool_name=f"{label}__pay")
    old.created_at = now - timedelta(hours=5)
    old.save(update_fields=["created_at"])
    ApprovalRequestFactory(organization=org, tool_name=f"{label}__pay_more")
    ApprovalRequestFactory(organization=org, status="approved")
    org.read_only = True
    org.read_only_reason = f"{label} month-end close"
    org.save()
    near = BudgetFactory(
        organization=org, name=f"{label} tokens", scope="organization", agent=None, limit=1000
    )
    BudgetFactory(organization=org, name=f"{label} calm", scope="organization", agent=None, limit=10**9)
    _usage(org, 850)  # 85 % of the near budget (warn at 80 %), nothing of the calm one
    failing = ConnectorFactory(organization=org, name=f"{label}erp")
    ConnectorCallLogFactory(
        organization=org, connector=failing, status="ok", created_at=now - timedelta(hours=2)
    )
    ConnectorCallLogFactory(
        organization=org,
        connector=failing,
        status="error",
        error="timeout",
        created_at=now - timedelta(hours=1),
    )
    healthy = ConnectorFactory(organization=org, name=f"{label}crm")
    ConnectorCallLogFactory(
        organization=org, connector=healthy, status="error", created_at=now - timedelta(hours=3)
    )
    ConnectorCallLogFactory(
        organization=org, connector=healthy, status="ok", created_at=now - timedelta(hours=2)
    )
    return {"oldest": old, "budget": near, "failing": failing, "healthy": healthy}


def test_card_reports_pending_approvals_read_only_budgets_and_failing_connectors(org, org_admin):
    made = _troubled(org, "acme")

    (card,) = org_dashboard_cards(organizations=[org])

    assert card.organization == org
    assert card.approvals.pending == 2
    assert card.approvals.oldest_at == made["oldest"].created_at
    assert card.approvals.url == reverse("approvals-inbox", kwargs={"org_slug": "acme"})
    assert card.read_only.on is True and card.read_only.reason == "acme month-end close"
    assert [(b.name, b.used, b.limit) for b in card.budgets] == [("acme tokens", 850, 1000)]
    assert card.budgets[0].url == reverse("admin:agents_budget_change", args=[made["budget"].pk])
    assert [c.name for c in card.connectors] == ["acmeerp"]
    assert card.connectors[0].last_error_at is not None and card.connectors[0].circuit_open is False
    assert card.needs_attention is True


def test_an_open_circuit_lists_the_connector_without_a_logged_error(org):
    connector = ConnectorFactory(organization=org, name="flaky")
    breaker = breaker_for(str(connector.pk), failure_threshold=1)
    breaker.record_failure()

    (card,) = org_dashboard_cards(organizations=[org])

    assert [(c.name, c.circuit_open, c.last_error_at) for c in card.connectors] == [("flaky", True, None)]


def test_a_calm_organisation_needs_no_attention(org):
    BudgetFactory(organization=org, name="calm", scope="organization", agent=None, limit=1000)
    _usage(org, 100)
    ConnectorCallLogFactory(organization=org, status="error", created_at=timezone.now() - timedelta(days=3))

    (card,) = org_dashboard_cards(organizations=[org])

    assert (card.approvals.pending, card.read_only.on, card.budgets, card.connectors) == (0, False, [], [])
    assert card.needs_attention is False


def test_card_query_count_does_not_grow_with_budgets_or_connectors(org, django_assert_max_num_queries):
    _troubled(org, "acme")
    for n in range(5):
        BudgetFactory(organization=org, name=f"more {n}", scope="organization", agent=None, limit=10)
        ConnectorCallLogFactory(organization=org, status="error")

    with django_assert_max_num_queries(6):
        (card,) = org_dashboard_cards(organizations=[org])
    assert len(card.budgets) == 6 and len(card.connectors) == 6


def _admin_index(user) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(reverse("admin:index"))
    assert response.status_code == 200
    return response.content.decode()


def test_admin_home_shows_the_admins_organisation_card_above_the_app_list(org, org_admin):
    _troubled(org, "acme")

    html = _admin_index(org_admin)

    assert 'id="org-dashboard"' in html
    assert 'data-org="acme"' in html
    assert "acme month-end close" in html
    assert "acme tokens" in html and "acmeerp" in html
    assert reverse("approvals-inbox", kwargs={"org_slug": "acme"}) in html
    assert html.index('id="org-dashboard"') < html.index('id="content-main"')


def test_admin_of_one_organisation_never_sees_anothers_figures(org, org_admin, other_org):
    _troubled(org, "acme")
    _troubled(other_org, "globex")

    html = _admin_index(org_admin)

    assert 'data-org="acme"' in html
    assert "globex" not in html.lower()


def test_admin_of_two_organisations_sees_a_card_for_each(org, other_org):
    boss = member_of(org, Role.OWNER, username="boss")
    from tests.factories import MembershipFactory

    MembershipFactory(organization=other_org, user=boss, role=Role.ADMIN)
    third = OrganizationFactory(slug="initech", name="Initech")
    member_of(third, Role.MEMBER, username="someone")
    _troubled(third, "initech")

    html = _admin_index(boss)

    assert 'data-org="acme"' in html and 'data-org="globex"' in html
    assert "initech" not in html.lower()


def test_admin_home_dashboard_is_translated(org, org_admin):
    _troubled(org, "acme")
    client = Client()
    client.force_login(org_admin)

    html = client.get(reverse("admin:index"), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()

    assert "待审批" in html and "只读模式" in html


def test_an_apps_index_page_shows_no_organisation_cards(org, org_admin):
    """Django's app index extends the admin home page's template; only the home page has the cards."""
    _troubled(org, "acme")
    client = Client()
    client.force_login(org_admin)

    html = client.get(reverse("admin:app_list", args=["connectors"])).content.decode()

    assert 'id="content-main"' in html
    assert 'id="org-dashboard"' not in html


def test_a_superuser_sees_a_bounded_number_of_cards_and_how_many_are_left_out(db):
    from platform_core.wiring.admin_dashboard import MAX_CARDS
    from tests.factories import UserFactory

    for n in range(MAX_CARDS + 2):
        OrganizationFactory(slug=f"org-{n:02d}", name=f"Org {n:02d}")
    root = UserFactory(username="root", is_staff=True, is_superuser=True)

    html = _admin_index(root)

    assert html.count('<article class="org-card') == MAX_CARDS
    assert f'data-org="org-{MAX_CARDS - 1:02d}"' in html and f'data-org="org-{MAX_CARDS:02d}"' not in html
    assert f"{MAX_CARDS} of {MAX_CARDS + 2} organisations" in html
