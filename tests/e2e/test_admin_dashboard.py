"""The admin home page in Debian's chromium under the strict policy: the signed-in admin sees a card for
each organisation they administer (and none for another's), styled by static/css/admin.css with nothing
refused; the screenshot goes to docs/screenshots/admin-dashboard.png (the README shows it)."""

from __future__ import annotations

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import ROOT, E2EServer

pytestmark = pytest.mark.e2e

OWNER = "dash-dora"
SCREENSHOT = ROOT / "docs" / "screenshots" / "admin-dashboard.png"


def build_dashboard_world() -> dict[str, str]:
    """Two organisations Dora administers, one with something of everything to report, and a third she
    does not (run against the e2e server's database)."""
    from datetime import timedelta

    from django.utils import timezone

    from agents.usage.models import UsageRecord
    from platform_core.models import Role
    from tests.factories import (
        ConnectorCallLogFactory,
        ConnectorFactory,
        MembershipFactory,
        OrganizationFactory,
        member_of,
    )

    now = timezone.now()
    # Only once tests.factories is loaded: the agents' and hooks' factories import it.
    from tests.agents.factories import BudgetFactory
    from tests.hooks.factories import ApprovalRequestFactory

    busy = OrganizationFactory(slug="dash-north", name="Northwind Trading")
    calm = OrganizationFactory(slug="dash-south", name="Southwind Studio")
    other = OrganizationFactory(slug="dash-other", name="Elsewhere Holdings")
    owner = member_of(busy, Role.OWNER, username=OWNER)
    MembershipFactory(organization=calm, user=owner, role=Role.ADMIN)
    member_of(other, Role.OWNER, username="dash-else")

    for org, label in ((busy, "north"), (other, "elsewhere")):
        for hours in (26, 3):
            request = ApprovalRequestFactory(organization=org, tool_name=f"{label}erp__create_payment")
            request.created_at = now - timedelta(hours=hours)
            request.save(update_fields=["created_at"])
        org.read_only = True
        org.read_only_reason = "Month-end close until Monday"
        org.save()
        BudgetFactory(organization=org, name="Monthly tokens", scope="organization", agent=None, limit=500000)
        BudgetFactory(
            organization=org, name="Daily tokens", scope="organization", agent=None, period="day", limit=40000
        )
        UsageRecord.objects.create(
            organization=org, purpose="tool_loop", prompt_tokens=41200, total_tokens=41200, currency="USD"
        )
        erp = ConnectorFactory(organization=org, name=f"{label}erp")
        for minutes in (50, 20):
            ConnectorCallLogFactory(
                organization=org,
                connector=erp,
                status="error",
                error="timeout",
                created_at=now - timedelta(minutes=minutes),
            )
        ConnectorCallLogFactory(organization=org, connector=ConnectorFactory(organization=org, name="crm"))
    return {"busy": busy.slug, "calm": calm.slug}


@pytest.fixture(scope="module")
def dashboard_world(e2e_server: E2EServer) -> dict[str, str]:
    return e2e_server.build("tests.e2e.test_admin_dashboard:build_dashboard_world")


@pytest.fixture
def admin_page(signed_in_page, dashboard_world):
    return signed_in_page(OWNER)


def test_admin_home_shows_a_card_per_administered_organisation(admin_page, e2e_server, dashboard_world):
    page, errors = admin_page
    cards = page.locator("#org-dashboard .org-card")
    expect(cards).to_have_count(2)
    assert page.locator("#org-dashboard").evaluate("el => getComputedStyle(el).display") == "grid"

    busy = page.locator(f".org-card[data-org={dashboard_world['busy']}]")
    expect(busy.locator(".org-figure-approvals .org-figure-number")).to_have_text("2")
    expect(busy.locator(".org-figure-approvals")).to_contain_text("oldest 1")
    expect(busy.locator(".org-figure-read-only")).to_contain_text("Month-end close until Monday")
    expect(busy.locator(".org-budgets li")).to_have_count(1)
    expect(busy.locator(".org-budgets li")).to_contain_text("Daily tokens")
    expect(busy.locator(".org-connectors li")).to_have_count(1)
    expect(busy.locator(".org-connectors li")).to_contain_text("northerp")

    calm = page.locator(f".org-card[data-org={dashboard_world['calm']}]")
    expect(calm).to_contain_text("All clear")
    expect(page.locator("#org-dashboard")).not_to_contain_text("Elsewhere")
    expect(page.locator("#org-dashboard")).not_to_contain_text("elsewhereerp")
    expect(page.locator("#content-main .app-agents, #content-main [class*=app-]").first).to_be_visible()
    assert errors == []

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    assert SCREENSHOT.stat().st_size > 20000

    busy.locator(".org-figure-approvals a").click()
    page.wait_for_url(f"**/o/{dashboard_world['busy']}/approvals/")
    assert errors == []


def test_admin_home_cards_fit_a_phone(signed_in_page, dashboard_world, tmp_path):
    page, _ = signed_in_page(OWNER, width=390, height=844)
    expect(page.locator("#org-dashboard .org-card")).to_have_count(2)
    widths = page.evaluate(
        "() => [...document.querySelectorAll('#org-dashboard .org-card')].map("
        "(el) => el.getBoundingClientRect().right)"
    )
    assert all(right <= 390 for right in widths), widths
    page.screenshot(path=str(tmp_path / "admin-dashboard-phone.png"))
