"""An approval request says why its call was held (issue #15): "condition matched: amount > 10000" or
"condition could not be evaluated: …", stored with the request and shown in the inbox's detail page, the
API and the Feishu card."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse
from django.utils import translation

from hooks.conditions import evaluate_condition
from hooks.delivery import pending_card_for
from hooks.hold_reasons import hold_reason_data, hold_reason_text
from hooks.services import approval_request_create
from platform_core.models import Role
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory

pytestmark = pytest.mark.django_db

# (condition, arguments, what the request says), in English
REASONS = [
    ("amount > 10000", {"amount": "18600.00"}, "condition matched: amount > 10000"),
    ("", {"amount": "1"}, "the policy has no condition: every call it covers needs approval"),
    (
        "amount > 10000",
        {"amount": "fifty"},
        "condition could not be evaluated: amount is text, which cannot be compared with a number "
        "(amount > 10000)",
    ),
    (
        "amount > 10000",
        {"currency": "CNY"},
        "condition could not be evaluated: the call has no argument amount (amount > 10000)",
    ),
    (
        'order.due < "2027-01-01"',
        {"order": {"due": "2026-12-01T10:00:00Z"}},
        "condition could not be evaluated: order.due is a date and time, which cannot be compared with a "
        'date (order.due < "2027-01-01")',
    ),
    (
        "10000 < amount",
        {"amount": True},
        "condition could not be evaluated: amount is true or false, which cannot be compared with a "
        "number (10000 < amount)",
    ),
    (
        'paid_at > "2026-12-01T10:00:00+08:00"',
        {"paid_at": "2026-12-01T10:00:00"},
        "condition could not be evaluated: paid_at: a date and time with a time zone cannot be compared "
        'with one without (paid_at > "2026-12-01T10:00:00+08:00")',
    ),
    (
        "amount > 10000",
        {"amount": float("inf")},
        "condition could not be evaluated: amount is not a finite number (amount > 10000)",
    ),
    (
        "amount >>> 1",
        {"amount": 1},
        "condition could not be evaluated: the condition is not valid (amount >>> 1)",
    ),
]


@pytest.mark.parametrize(("condition", "arguments", "said"), REASONS)
def test_the_reason_names_the_condition_and_what_could_not_be_compared(condition, arguments, said):
    with translation.override("en"):
        assert hold_reason_text(hold_reason_data(evaluate_condition(condition, arguments))) == said


def test_a_request_stored_before_reasons_existed_says_nothing():
    assert hold_reason_text({}) == "" and hold_reason_text(None) == ""


@pytest.fixture
def held(org):
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    policy = ApprovalPolicyFactory(organization=org, actions=[action], condition="amount > 10000")
    outcome = evaluate_condition(policy.condition, {"amount": "ten thousand"})
    return approval_request_create(
        organization_id=org.pk,
        policy=policy,
        tool_name="erp__create_payment",
        arguments={"amount": "ten thousand"},
        hold_reason=hold_reason_data(outcome),
    )


UNJUDGED = "condition could not be evaluated: amount is text, which cannot be compared with a number (amount > 10000)"


def test_the_inbox_detail_page_says_why_the_call_was_held(client, org, held):
    user = member_of(org, Role.ADMIN, username="ada")
    assert client.login(username=user.username, password=PASSWORD)
    page = client.get(
        reverse("approvals-inbox-detail", kwargs={"org_slug": org.slug, "approval_id": held.pk}),
        HTTP_ACCEPT_LANGUAGE="en",
    )
    assert page.status_code == 200
    assert "Why it was held" in page.text and html.escape(UNJUDGED, quote=False) in page.text


def test_the_api_gives_the_reason_as_data_and_as_text(client_for, org, held):
    admin = member_of(org, Role.ADMIN, username="ada")
    body = (
        client_for(admin)
        .get(f"/api/v1/orgs/{org.slug}/approvals/{held.pk}/", HTTP_ACCEPT_LANGUAGE="en")
        .json()
    )
    assert body["held_because"] == UNJUDGED
    assert body["hold_reason"] == {
        "kind": "unjudged",
        "condition": "amount > 10000",
        "problem": "mismatch",
        "argument": "amount",
        "found": "text",
        "expected": "number",
    }


def test_the_feishu_card_says_why_the_call_was_held(held):
    card = str(pending_card_for(held, "en"))
    assert f"Why it was held: {UNJUDGED}" in card
    assert "审批原因：" in str(pending_card_for(held, "zh-hans"))
