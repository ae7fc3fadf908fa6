"""Who is asked: a policy that lists platform approvers goes to them; one that lists nobody goes to the
organisation's approvers, admins and owners. The policy form says who will be asked, the inbox of an
approver with nothing to decide says why, and the chat names people instead of ``feishu:ou_…``."""

from __future__ import annotations

import pytest
from django.urls import reverse

from hooks.approval import approval_approvers
from hooks.services import approval_decide, approval_request_create
from platform_core.models import Role
from tests.factories import PASSWORD, member_of
from tests.hooks.factories import ApprovalPolicyFactory, ApprovalRequestFactory

pytestmark = pytest.mark.django_db


def _ask(org, policy):
    return approval_request_create(
        organization_id=org.pk, policy=policy, tool_name="erp__create_payment", arguments={"amount": 60000}
    )


def _inbox(client, user, org):
    assert client.login(username=user.username, password=PASSWORD)
    return client.get(reverse("approvals-inbox", kwargs={"org_slug": org.slug}))


def test_an_approver_sees_and_decides_a_request_of_a_policy_that_lists_nobody(client, org, approver):
    approval = _ask(org, ApprovalPolicyFactory(organization=org, approver_open_ids=[]))
    response = _inbox(client, approver, org)
    assert [a.pk for a in response.context["page"].object_list] == [approval.pk]
    result = approval_decide(approval=approval, decision="approve", via="web", actor=approver)
    assert result.changed and result.approval.decided_by == approver


def test_a_policy_that_lists_people_goes_to_them_only(client, org, approver):
    listed = member_of(org, Role.APPROVER, username="lee")
    approval = _ask(org, ApprovalPolicyFactory(organization=org, approver_users=[listed]))
    assert not _inbox(client, approver, org).context["page"].object_list
    assert [a.pk for a in _inbox(client, listed, org).context["page"].object_list] == [approval.pk]


def test_the_empty_inbox_of_an_approver_says_why(client, org, approver):
    other = member_of(org, Role.APPROVER, username="lee")
    ApprovalRequestFactory(organization=org, approver_users=[other])
    page = _inbox(client, approver, org).content.decode()
    assert "No approval requests here" not in page
    assert "Nothing is waiting for you" in page
    assert "policies that list you" in page and "policies that list nobody" in page
    assert "1 pending request is assigned to other approvers" in page


def test_the_empty_inbox_of_an_approver_when_nothing_waits_at_all(client, org, approver):
    page = _inbox(client, approver, org).content.decode()
    assert "Nothing is waiting for you" in page and "assigned to other approvers" not in page


def test_the_chat_names_people_and_marks_feishu_only_approvers(org):
    lee = member_of(org, Role.APPROVER, username="lee", first_name="Lee", last_name="Chen")
    policy = ApprovalPolicyFactory(organization=org, approver_users=[lee], approver_open_ids=["ou_boss"])
    approvers = approval_approvers(_ask(org, policy))
    assert approvers == ["Lee Chen", "Feishu user ou_boss"]


def test_the_chat_names_the_organisations_approvers_for_a_policy_that_lists_nobody(org, approver):
    member_of(org, Role.OWNER, username="olga")
    member_of(org, Role.MEMBER, username="mia")
    approvers = approval_approvers(_ask(org, ApprovalPolicyFactory(organization=org, approver_open_ids=[])))
    assert approvers == ["april", "olga"]


def test_the_policy_form_says_who_will_be_asked(client, org, approver):
    owner = member_of(org, Role.OWNER, username="olga")
    policy = ApprovalPolicyFactory(organization=org, approver_open_ids=["ou_boss"])
    assert client.login(username=owner.username, password=PASSWORD)
    page = client.get(reverse("admin:hooks_approvalpolicy_change", args=[policy.pk])).content.decode()
    assert "Who will be asked" in page
    assert "Nobody is listed, so every approver, admin and owner of the organisation" in page
    assert "april" in page and "olga" in page and "ou_boss" in page

    add = client.get(reverse("admin:hooks_approvalpolicy_add")).content.decode()
    assert "Who will be asked" in add and "every approver, admin and owner" in add
