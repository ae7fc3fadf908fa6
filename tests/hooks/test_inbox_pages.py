"""What the inbox shows: the list gives the tool, the key arguments, who asked and since when; the
detail page links to the conversation for those allowed to see it, offers real Approve and Reject
buttons, names the approvers, and shows a cancelled request as cancelled."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from hooks.inbox import key_arguments
from platform_core.models import Role
from tests.agents.factories import ConversationFactory
from tests.factories import PASSWORD, member_of
from tests.hooks.factories import ApprovalRequestFactory

pytestmark = pytest.mark.django_db


def _get(client, user, url):
    assert client.login(username=user.username, password=PASSWORD)
    return client.get(url)


def _detail(approval):
    return reverse(
        "approvals-inbox-detail", kwargs={"org_slug": approval.organization.slug, "approval_id": approval.pk}
    )


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        (
            {"amount": "18600.00", "currency": "CNY", "note": "x" * 50},
            [("amount", "18600.00"), ("currency", "CNY")],
        ),
        ({"order_id": "PO-0001", "supplier": "Acme"}, [("order_id", "PO-0001"), ("supplier", "Acme")]),
        ({"b": 1, "a": 2, "c": 3, "d": 4}, [("b", "1"), ("a", "2"), ("c", "3")]),
        ({"nested": {"x": 1}, "ok": True}, [("ok", "true")]),
        ({"text": "y" * 200}, [("text", "y" * 39 + "…")]),
        ({}, []),
    ],
)
def test_key_arguments_prefer_amounts_and_orders_and_stay_short(arguments, shown):
    assert key_arguments(arguments) == shown


def test_the_list_shows_tool_key_arguments_who_asked_and_since_when(client, org, approver):
    mia = member_of(org, Role.MEMBER, username="mia", first_name="Mia", last_name="Wong")
    ApprovalRequestFactory(
        organization=org,
        approver_users=[approver],
        requested_by=mia,
        arguments={"amount": "18600.00", "order": "PO-0001"},
        created_at=timezone.now() - timedelta(minutes=7),
    )
    page = _get(client, approver, reverse("approvals-inbox", kwargs={"org_slug": org.slug})).content.decode()
    for header in ("Tool", "Key arguments", "Requested by", "Waiting since"):
        assert f">{header}</th>" in page
    assert "erp__create_payment" in page and "18600.00" in page and "PO-0001" in page
    assert "Mia Wong" in page and "7\xa0minutes ago" in page


def test_the_detail_links_to_the_conversation_for_its_owner_and_for_admins(client, org, approver):
    mia = member_of(org, Role.MEMBER, username="mia")
    conversation = ConversationFactory(organization=org, user=mia)
    approval = ApprovalRequestFactory(
        organization=org, approver_users=[approver], requested_by=mia, conversation_id=str(conversation.pk)
    )
    chat = reverse("chat-conversation", kwargs={"org_slug": org.slug, "conversation_id": conversation.pk})
    own = _get(client, mia, _detail(approval))  # the requester may follow their own request
    assert own.status_code == 200 and f'href="{chat}"' in own.content.decode()
    assert own.context["can_decide"] is False

    admin = member_of(org, Role.ADMIN, username="ada")
    page = _get(client, admin, _detail(approval)).content.decode()
    assert reverse("admin:agents_conversation_change", args=[conversation.pk]) in page

    page = _get(client, approver, _detail(approval)).content.decode()
    assert chat not in page and "/admin/agents/conversation/" not in page


def test_another_member_cannot_open_someone_elses_request(client, org):
    mia = member_of(org, Role.MEMBER, username="mia")
    approval = ApprovalRequestFactory(
        organization=org, requested_by=member_of(org, Role.MEMBER, username="max")
    )
    assert _get(client, mia, _detail(approval)).status_code == 404


def test_the_decision_buttons_are_styled_buttons(client, org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    page = _get(client, approver, _detail(approval)).content.decode()
    assert 'class="button approve" name="decision" value="approve"' in page
    assert 'class="button reject" name="decision" value="reject"' in page


def test_the_detail_names_the_approvers(client, org, approver):
    lee = member_of(org, Role.APPROVER, username="lee", first_name="Lee", last_name="Chen")
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver, lee])
    page = _get(client, approver, _detail(approval)).content.decode()
    assert "Lee Chen" in page and "Feishu user ou_boss" in page


def test_a_cancelled_request_says_cancelled(client, org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver], status="cancelled")
    page = _get(client, approver, _detail(approval)).content.decode()
    assert "Cancelled" in page and "Expired" not in page
