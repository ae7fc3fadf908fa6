"""The whole demo played in Chromium as a new admin would on a fresh ``make run`` (issue #15's acceptance):
sign in, ask an example question that reads, ask for a payment above the demo policy's limit, approve it in
the inbox as a member with the approver role (added the way an operator does, with ``add_member``), see the
answer continue and the payment recorded; then a payment below the limit goes through with no approval.

The server is the demo stack of ``test_demo_stack``: ``seed_demo`` on a fresh database, no model endpoint
(the offline demo model), the demo ERP under ``/demo-api/`` of the same daphne.
"""

from __future__ import annotations

import re
import sys
from decimal import Decimal

import pytest

from agents.demo import DEMO_EXAMPLE_QUESTIONS
from tests.e2e.browser_pages import expect, page_opener, submit_sign_in
from tests.e2e.conftest import run_checked
from tests.e2e.test_demo_stack import DEMO_PASSWORD, demo_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.e2e

READ, WRITE, _PLAN = DEMO_EXAMPLE_QUESTIONS[:3]
APPROVER, APPROVER_PASSWORD = "anna", "anna-approves-payments-1"
TIMEOUT_MS = 25000  # generous: the machine running the browser tests is shared


@pytest.fixture(scope="module")
def approver(demo_server):  # noqa: F811
    """A finance colleague with the approver role, added to the demo organisation by the operator."""
    out = run_checked(
        [
            sys.executable,
            "manage.py",
            "add_member",
            "demo",
            APPROVER,
            "--role",
            "approver",
            "--password",
            APPROVER_PASSWORD,
        ],
        demo_server.env,
        "add_member",
    )
    assert "anna is now approver of demo" in out
    return APPROVER


@pytest.fixture
def sign_in(demo_server, browser):  # noqa: F811
    """``sign_in(username, password)``: a new browser context signed in through the login page."""
    with page_opener(browser, TIMEOUT_MS) as opener:

        def make(username: str, password: str):
            page = opener.new_page(width=1280, height=900)
            page.goto(f"{demo_server.url}/")
            expect(page.locator("#id_username")).to_be_visible()  # the home page asks to sign in first
            submit_sign_in(page, username, password)
            expect(page.locator(".topbar")).to_contain_text(username)
            return page

        yield make


def _ask(page, question: str) -> None:
    page.fill("#composer-input", question)
    page.press("#composer-input", "Enter")


def _turn(page, index: int):
    """The ``index``-th question and answer of the open conversation, once its run has ended."""
    turn = page.locator("#chat li.turn").nth(index)
    expect(turn.locator(".run-footer")).to_be_visible()
    return turn


def _payments(demo_server) -> list[tuple[int, Decimal]]:  # noqa: F811
    rows = demo_server.query("SELECT order_id, amount FROM connectors_demopayment ORDER BY id")
    return [(order, Decimal(str(amount))) for order, amount in rows]


def _calls(demo_server) -> list[tuple[str, str, bool]]:  # noqa: F811
    rows = demo_server.query(
        "SELECT tool_name, status, approval_ref FROM connectors_connectorcalllog ORDER BY created_at, id"
    )
    return [(tool, status, bool(ref)) for tool, status, ref in rows]


def test_a_new_admin_plays_the_whole_demo_with_an_approver_in_the_inbox(
    demo_server,  # noqa: F811
    approver,
    sign_in,
):
    admin = sign_in("admin", DEMO_PASSWORD)
    admin.locator(".topnav a", has_text="Chat").click()
    admin.wait_for_url("**/o/demo/chat/")

    # 1. An example question that reads: a readable answer, a table of the two draft orders.
    admin.click(f".example-question[data-question='{READ}']")
    read = _turn(admin, 0)
    answer = read.locator(".answer")
    expect(answer).to_contain_text("Offline demo model")
    expect(answer.locator("table tbody tr")).to_have_count(2)
    expect(answer.locator("table")).to_contain_text("Hangzhou Tea Supply Co.")
    expect(answer.locator("table")).to_contain_text("Nordic Office AB")

    # 2. The payment above the policy's limit, from the example questions of a new chat: it waits.
    admin.locator(".topnav a", has_text="Chat").click()
    admin.wait_for_url("**/o/demo/chat/")
    admin.click(f".example-question[data-question='{WRITE}']")
    card = admin.locator("#chat li.turn").first.locator(".tool-card").first
    expect(card).to_contain_text("erp__create_payment")
    expect(card).to_have_class(re.compile(r"\bawaiting-approval\b"))
    waiting = card.locator(".tool-approval.pending")
    expect(waiting).to_contain_text("Waiting for")
    request_url = waiting.locator("a.approval-link").get_attribute("href")
    assert request_url.startswith("/o/demo/approvals/"), request_url
    assert _payments(demo_server) == []
    [(approval_id, status, arguments)] = demo_server.query(
        "SELECT id, status, arguments FROM hooks_approvalrequest"
    )
    assert status == "pending" and '"18600"' in arguments, arguments
    assert approval_id.replace("-", "") in request_url.replace("-", "")

    # 3. The approver signs in elsewhere, finds it in the inbox and approves it with the styled button.
    finance = sign_in(APPROVER, APPROVER_PASSWORD)
    finance.locator(".topnav a", has_text="Approvals").click()
    rows = finance.locator("table.approvals tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("erp__create_payment")
    expect(rows.first).to_contain_text("18600")
    expect(rows.first).to_contain_text("admin")
    rows.first.locator("a").first.click()
    expect(finance.locator("dl.facts")).to_contain_text("Large payments")
    expect(finance.locator(".hold-reason")).to_contain_text("amount > 10000")
    approve = finance.locator("button.approve")
    style = approve.evaluate("(b) => getComputedStyle(b).backgroundColor")
    assert style == "rgb(21, 128, 61)", style  # a real green button, not a bare browser default
    approve.click()
    expect(finance.locator("dd.status-approved")).to_be_visible()

    # 4. Back in the admin's chat, without a reload: approved by Anna, the call ran, the answer goes on.
    expect(card.locator(".tool-approval.approved")).to_contain_text(APPROVER)
    expect(card).to_have_class(re.compile(r"\bsucceeded\b"))
    paid = _turn(admin, 0).locator(".answer")
    expect(paid).to_contain_text("Offline demo model")
    expect(paid).to_contain_text("18600")
    assert _payments(demo_server) == [(1, Decimal("18600"))]
    assert demo_server.query("SELECT status FROM connectors_demopurchaseorder WHERE id = 1") == [("paid",)]
    [(status, decided_by)] = demo_server.query(
        "SELECT a.status, u.username FROM hooks_approvalrequest a JOIN auth_user u ON u.id = a.decided_by_id"
    )
    assert (status, decided_by) == ("approved", APPROVER)

    # 5. Below the limit, on another order (approved first: the demo ERP pays approved orders only):
    #    it goes through at once, with no approval card and no new approval request.
    _ask(admin, "Approve purchase order PO-0002")
    expect(_turn(admin, 1).locator(".answer")).to_contain_text("approved")
    _ask(admin, "Pay 500 CNY for purchase order PO-0002")
    small = admin.locator("#chat li.turn").nth(2)
    small_card = small.locator(".tool-card")
    expect(small_card).to_contain_text("erp__create_payment")
    expect(small_card).to_have_class(re.compile(r"\bsucceeded\b"))  # not "awaiting-approval"
    small = _turn(admin, 2)
    expect(small_card).to_have_count(1)
    expect(small.locator(".tool-approval")).to_be_hidden()
    expect(small.locator(".answer")).to_contain_text("500")
    assert not admin.locator("#chat .tool-card.awaiting-approval").count()

    assert demo_server.query("SELECT COUNT(*) FROM hooks_approvalrequest") == [(1,)]
    assert _payments(demo_server) == [(1, Decimal("18600")), (2, Decimal("500"))]
    assert _calls(demo_server) == [
        ("erp__list_purchase_orders", "ok", False),
        ("erp__create_payment", "ok", True),
        ("erp__approve_purchase_order", "ok", False),
        ("erp__create_payment", "ok", False),
    ]
