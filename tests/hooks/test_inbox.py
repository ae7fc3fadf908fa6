"""The web approvals inbox: approvers list requests, open one and approve or reject it with a comment."""

from __future__ import annotations

import pytest
from django.urls import reverse

from platform_core.models import AuditLog, Role
from tests.factories import PASSWORD, member_of
from tests.hooks.factories import ApprovalRequestFactory

pytestmark = pytest.mark.django_db


def signed_in(client, user):
    assert client.login(username=user.username, password=PASSWORD)
    return client


def inbox(org, status=None):
    url = reverse("approvals-inbox", kwargs={"org_slug": org.slug})
    return f"{url}?status={status}" if status else url


def detail(approval):
    return reverse(
        "approvals-inbox-detail", kwargs={"org_slug": approval.organization.slug, "approval_id": approval.pk}
    )


def decide(approval):
    return reverse(
        "approvals-inbox-decide", kwargs={"org_slug": approval.organization.slug, "approval_id": approval.pk}
    )


def test_an_approver_sees_pending_requests_and_approves_one_with_a_comment(client, org, approver):
    approval = ApprovalRequestFactory(
        organization=org, approver_users=[approver], arguments={"amount": 60000, "token": "[redacted]"}
    )
    signed_in(client, approver)
    listing = client.get(inbox(org))
    assert listing.status_code == 200
    assert [a.pk for a in listing.context["page"].object_list] == [approval.pk]
    assert approval.tool_name in listing.content.decode()

    page = client.get(detail(approval))
    assert page.status_code == 200 and page.context["can_decide"] is True
    assert "60000" in page.content.decode() and "[redacted]" in page.content.decode()

    response = client.post(decide(approval), {"decision": "approve", "comment": "within budget"}, follow=True)
    assert response.status_code == 200 and "Approved." in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by == approver
    assert approval.comment == "within budget" and approval.decided_via == "web"
    assert AuditLog.objects.get(action="approval.approved").actor == approver
    assert not client.get(inbox(org)).context["page"].object_list  # no longer pending
    assert [a.pk for a in client.get(inbox(org, "approved")).context["page"].object_list] == [approval.pk]


def test_a_second_decision_changes_nothing_and_says_so(client, org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    signed_in(client, approver)
    client.post(decide(approval), {"decision": "reject", "comment": "no"})
    response = client.post(decide(approval), {"decision": "approve"}, follow=True)
    assert "already rejected" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == "rejected" and approval.comment == "no"


def test_a_member_without_the_approver_role_cannot_open_the_inbox(client, org, member):
    approval = ApprovalRequestFactory(organization=org)
    signed_in(client, member)
    assert client.get(inbox(org)).status_code == 403
    assert client.post(decide(approval), {"decision": "approve"}).status_code == 403
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_an_approver_not_named_by_the_request_neither_sees_nor_decides_it(client, org, approver):
    other = member_of(org, Role.APPROVER, username="otto")
    approval = ApprovalRequestFactory(organization=org, approver_users=[other])
    signed_in(client, approver)
    assert client.get(inbox(org)).context["page"].object_list.exists() is False
    assert client.get(detail(approval)).status_code == 404
    assert client.post(decide(approval), {"decision": "approve"}).status_code == 404
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_an_admin_sees_every_request_but_decides_only_where_allowed(client, org, approver):
    admin = member_of(org, Role.ADMIN, username="ada")
    named = ApprovalRequestFactory(organization=org, approver_users=[approver])
    unnamed = ApprovalRequestFactory(organization=org)
    signed_in(client, admin)
    assert {a.pk for a in client.get(inbox(org)).context["page"].object_list} == {named.pk, unnamed.pk}
    assert client.get(detail(named)).context["can_decide"] is False
    assert client.post(decide(named), {"decision": "approve"}).status_code == 403
    assert client.get(detail(unnamed)).context["can_decide"] is True


def test_the_inbox_needs_a_signed_in_user(client, org):
    response = client.get(inbox(org))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_inbox_speaks_chinese(client, org, approver):
    ApprovalRequestFactory(organization=org, approver_users=[approver])
    signed_in(client, approver)
    page = client.get(inbox(org), HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "审批" in page.content.decode()


@pytest.mark.cross_org("approvals-inbox", "approvals-inbox-detail", "approvals-inbox-decide")
def test_another_organisations_requests_are_invisible_in_the_inbox(client, org, other_org):
    admin = member_of(org, Role.ADMIN, username="ada")
    foreign = ApprovalRequestFactory(organization=other_org)
    signed_in(client, admin)
    assert client.get(inbox(org)).context["page"].object_list.exists() is False
    own_slug_detail = reverse(
        "approvals-inbox-detail", kwargs={"org_slug": org.slug, "approval_id": foreign.pk}
    )
    own_slug_decide = reverse(
        "approvals-inbox-decide", kwargs={"org_slug": org.slug, "approval_id": foreign.pk}
    )
    assert client.get(own_slug_detail).status_code == 404
    assert client.post(own_slug_decide, {"decision": "approve"}).status_code == 404
    assert client.get(inbox(other_org)).status_code == 404
    foreign.refresh_from_db()
    assert foreign.status == "pending"
