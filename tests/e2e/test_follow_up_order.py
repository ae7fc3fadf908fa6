"""A follow-up sent while a call waits for approval sits at the same place live and after a reload.

The place is the stored event order: a follow-up is taken in by an ``inject`` event, which comes after
the events of the tool card it was sent during; until then it waits below everything the run did.
The test reads the order of the run's steps in the live page, reloads, and reads it again: before the
decision (the follow-up waiting) and after it (the follow-up taken, the answer written).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer, wait_for
from tests.e2e.test_chat import send, start_chat
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.e2e

DECIDER = "olga-approver"
FOLLOW_UP = "Use the company card if you can."

POLICY_SETUP = f"""
import django, json
django.setup()
from connectors.models import ConnectorAction
from hooks.models import ApprovalPolicy
from platform_core.models import Organization, Role
from platform_core.services import membership_set, user_get_or_create
org = Organization.objects.get(slug="acme")
owner = user_get_or_create(username={DECIDER!r}, password="not-used-in-this-test")
membership_set(organization=org, user=owner, role=Role.OWNER)
action = ConnectorAction.objects.unscoped().get(connector__organization=org, connector__name="erp", name="create_payment")
policy = ApprovalPolicy.objects.create(organization=org, name="every payment", timeout_seconds=600)
policy.actions.set([action])
policy.approver_users.set([owner])
print(json.dumps({{"policy": policy.pk}}))
"""

POLICY_TEARDOWN = """
import django, sys
django.setup()
from hooks.models import ApprovalPolicy
ApprovalPolicy.objects.unscoped().filter(pk=int(sys.argv[1])).delete()
"""

REJECT = f"""
import django, sys
django.setup()
from django.contrib.auth import get_user_model
from hooks.models import ApprovalRequest
from hooks.services import approval_decide
approval = ApprovalRequest.objects.unscoped().get(status="pending", policy_id=int(sys.argv[1]))
actor = get_user_model().objects.get(username={DECIDER!r})
approval_decide(approval=approval, decision="reject", via="web", actor=actor, comment="Not this week.")
"""


@pytest.fixture
def payment_policy(e2e_server: E2EServer) -> Iterator[int]:
    """Every ``erp__create_payment`` call of the chat's organisation waits for an owner's decision; the
    policy's id (other tests of the shared server may leave requests of their own pending)."""
    policy = json.loads(e2e_server.python(POLICY_SETUP).strip().splitlines()[-1])["policy"]
    try:
        yield policy
    finally:
        e2e_server.python(POLICY_TEARDOWN, str(policy))


STEPS_ORDER = """() => [...document.querySelectorAll('.turn .steps > li')].map((li) =>
    li.classList.contains('follow-up') ? 'follow-up:' + li.dataset.status
    : li.classList.contains('tool-card') ? 'tool-card' : li.className)"""


def _steps(page) -> list[str]:
    return page.evaluate(STEPS_ORDER)


def test_a_follow_up_sent_while_a_call_waits_for_approval_keeps_its_place_after_a_reload(
    make_page, e2e_server, scripted_llm, payment_policy
):
    # Given an agent whose payment call waits for approval
    scripted_llm.script(
        tool_calls(call("erp__create_payment", {"order_id": 1, "amount": "18600.00"}, id="pay")),
        text("The payment was rejected by the approver."),
        text("The payment was **rejected**: not this week."),
    )
    page = make_page()
    start_chat(page)
    send(page, "Pay 18,600 CNY for purchase order PO-0001")
    card = page.locator(".tool-card")
    expect(card).to_have_class(re.compile(r"\bawaiting-approval\b"))

    # When the user adds a follow-up while it waits
    send(page, FOLLOW_UP)
    expect(page.locator(".step.follow-up")).to_have_attribute("data-status", "pending")
    wait_for(
        lambda: e2e_server.query("SELECT COUNT(*) FROM agents_message WHERE content = ?", (FOLLOW_UP,))[0][0],
        what="the follow-up to be stored",
    )
    live = _steps(page)

    # Then a reload shows the same order
    page.reload()
    expect(page.locator(".tool-card")).to_have_class(re.compile(r"\bawaiting-approval\b"))
    expect(page.locator(".step.follow-up")).to_have_count(1)
    assert _steps(page) == live
    assert live.index("tool-card") < live.index("follow-up:pending")

    # And once the approver rejects the call, the follow-up is taken where the events say, live and reloaded
    e2e_server.python(REJECT, str(payment_policy))
    expect(page.locator(".run-footer")).to_be_visible()
    expect(page.locator(".step.follow-up")).to_have_attribute("data-status", "taken")
    live = _steps(page)
    page.reload()
    expect(page.locator(".run-footer")).to_be_visible()
    expect(page.locator(".step.follow-up")).to_have_attribute("data-status", "taken")
    assert _steps(page) == live
    assert live.index("tool-card") < live.index("follow-up:taken")
    assert any(FOLLOW_UP in json.dumps(request["messages"]) for request in scripted_llm.requests[1:])
