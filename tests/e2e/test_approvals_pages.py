"""The approval pages in Debian's chromium: the inbox and a request's page fit a phone (390 px, no
sideways scrolling) with real styled Approve and Reject buttons; the Feishu channel page copies the full
callback URL and its list fits a 1366-pixel screen; a run stopped while its call waits for approval says
"cancelled" on the chat's card, which links to the request."""

from __future__ import annotations

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import open_new_chat
from tests.e2e.conftest import E2EServer
from tests.fakes.openai_server import call, hang, tool_calls

pytestmark = pytest.mark.e2e

ORG = "umbrella"
OWNER, APPROVER, MEMBER = "umb-olga", "umb-april", "umb-mia"
AGENT = "Umbrella buyer"
NO_SIDEWAYS_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth"


def build_approvals_world(llm_base_url: str, site_url: str) -> dict[str, object]:
    """An organisation of its own: an owner, an approver, a member, the demo ERP, an agent on the scripted
    model, a Feishu channel, a policy on payments that lists nobody, and pending requests of the member
    (run in a subprocess against the e2e server's database)."""
    from django.conf import settings

    from connectors.demo.seed import DEMO_CONNECTOR_NAME, demo_connector_seed
    from connectors.models import Connector, ConnectorAction
    from hooks.services import approval_request_create
    from platform_core.models import Role
    from tests.factories import OrganizationFactory, member_of
    from tests.agents.factories import AgentFactory, ModelConfigFactory  # isort: skip
    from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory

    org = OrganizationFactory(slug=ORG, name="Umbrella Supplies")
    member_of(org, Role.OWNER, username=OWNER)
    member_of(org, Role.APPROVER, username=APPROVER, first_name="April", last_name="Lin")
    mia = member_of(org, Role.MEMBER, username=MEMBER, first_name="Mia", last_name="Wong")
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    settings.DEMO_API_BASE_URL = f"{site_url.rstrip('/')}/demo-api"
    demo_connector_seed(org)
    connector = Connector.objects.unscoped().get(organization=org, name=DEMO_CONNECTOR_NAME)
    agent = AgentFactory(organization=org, name=AGENT, instructions="Be brief.", completion_check=False)
    agent.connectors.set([connector])
    # Several channels with names, app ids and chats as long as they may be: the list must still fit.
    for n in range(3):
        FeishuChannelFactory(
            organization=org,
            name=f"Finance approvals room {n} (Shanghai office, purchasing and payments above budget)",
            app_id=f"cli_{n}" + "a1b2c3d4e5f6" * 5,
            default_chat_id=f"oc_{n}" + "7f3e9a1c5b" * 9,
        )
    channel = FeishuChannelFactory(organization=org, name="approvals")
    pay = ConnectorAction.objects.unscoped().get(connector=connector, name="create_payment")
    policy = ApprovalPolicyFactory(
        organization=org, name="All payments", actions=[pay], channel=channel, approver_open_ids=[]
    )
    requests = [
        approval_request_create(
            organization_id=org.pk,
            policy=policy,
            tool_name="erp__create_payment",
            arguments={"order_id": 1, "amount": "18600.00", "memo": "x" * 180, "currency": "CNY"},
            requested_by_id=mia.pk,
            agent_name=AGENT,
        )
        for _ in range(3)
    ]
    return {"channel": str(channel.pk), "approvals": [str(a.pk) for a in requests]}


@pytest.fixture(scope="module")
def world(e2e_server: E2EServer, scripted_llm_server) -> dict[str, object]:
    return e2e_server.build(
        "tests.e2e.test_approvals_pages:build_approvals_world", scripted_llm_server.base_url, e2e_server.url
    )


@pytest.fixture
def open_as(signed_in_page):
    """``open_as(username, path, width, height, **options)``: a new context signed in, on ``path``."""

    def make(username: str, path: str, width: int = 1280, height: int = 820, **options):
        page, _errors = signed_in_page(username, next=path, width=width, height=height, **options)
        return page

    return make


def _looks_like_a_button(locator) -> dict:
    return locator.evaluate(
        """(b) => { const s = getComputedStyle(b); const r = b.getBoundingClientRect();
            return { radius: s.borderRadius, background: s.backgroundColor, color: s.color,
                     height: r.height, width: r.width }; }"""
    )


def test_the_inbox_and_a_request_fit_a_phone_with_real_buttons(open_as, world):
    inbox = f"/o/{ORG}/approvals/"
    page = open_as(APPROVER, inbox, width=390, height=844)
    rows = page.locator("table.approvals tbody tr")
    expect(rows.first).to_contain_text("erp__create_payment")
    expect(rows.first).to_contain_text("18600.00")
    expect(rows.first).to_contain_text("Mia Wong")
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate("document.documentElement.scrollWidth")

    rows.first.locator("a").first.click()
    expect(page.locator("dl.facts")).to_contain_text("April Lin")
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate("document.documentElement.scrollWidth")
    approve = page.locator("button.approve")
    reject = page.locator("button.reject")
    for button, background in ((approve, "rgb(21, 128, 61)"), (reject, "rgb(255, 255, 255)")):
        style = _looks_like_a_button(button)
        assert style["radius"] == "8px" and style["background"] == background, style
        assert style["height"] >= 36 and style["width"] >= 100, style  # a comfortable touch target
    page.fill("#comment", "Within budget.")
    approve.click()
    expect(page.locator("dd.status-approved")).to_be_visible()
    assert page.evaluate(NO_SIDEWAYS_SCROLL)


def test_the_feishu_channel_page_copies_the_callback_url_and_its_list_fits_1366_pixels(
    open_as, world, e2e_server
):
    change = f"/admin/hooks/feishuchannel/{world['channel']}/change/"
    page = open_as(OWNER, change, width=1366, height=768, permissions=["clipboard-read", "clipboard-write"])
    field = page.locator("#callback-url")
    expected = f"{e2e_server.url}/integrations/feishu/{world['channel']}/callback/"
    expect(field).to_have_value(expected)
    page.click("button.copy-button")
    expect(page.locator(".copy-status")).to_have_text("Copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == expected

    page.goto(f"{e2e_server.url}/admin/hooks/feishuchannel/add/")
    expect(page.locator(".callback-url")).to_contain_text("will appear here once the channel is saved")
    assert page.locator("#callback-url").count() == 0

    page.goto(f"{e2e_server.url}/admin/hooks/feishuchannel/")
    expect(page.locator("#result_list")).to_contain_text("Finance approvals room 0")
    assert page.evaluate(NO_SIDEWAYS_SCROLL), page.evaluate("document.documentElement.scrollWidth")
    # nor does the table scroll inside its own box (the admin's .results scrolls what does not fit)
    widths = page.locator("#changelist .results").evaluate("(r) => [r.scrollWidth, r.clientWidth]")
    assert widths[0] <= widths[1], widths


def test_a_run_stopped_while_waiting_for_approval_says_cancelled_and_links_to_the_request(
    open_as, world, scripted_llm, e2e_server
):
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"order_id": 1, "amount": "99.00"}, id="pay")), hang(20)
    )
    page = open_as(MEMBER, f"/o/{ORG}/chat/")
    open_new_chat(page, agent=AGENT)
    page.fill("#composer-input", "Pay 99 CNY for purchase order PO-0001")
    page.press("#composer-input", "Enter")

    waiting = page.locator(".tool-approval.pending")
    expect(waiting).to_contain_text("Waiting for approval from")
    expect(waiting).to_contain_text("April Lin")
    link = waiting.locator("a.approval-link")
    href = link.get_attribute("href")
    assert href.startswith(f"/o/{ORG}/approvals/") and href.endswith("/")

    page.click("#stop-button")
    cancelled = page.locator(".tool-approval.cancelled")
    expect(cancelled).to_contain_text("cancelled")
    expect(cancelled).not_to_contain_text("expired")
    expect(page.locator(".tool-card .tool-badges")).to_contain_text("Cancelled")

    page.goto(f"{e2e_server.url}{href}")  # the requester follows the link to the request's page
    expect(page.locator("dd.status-cancelled")).to_have_text("Cancelled")
