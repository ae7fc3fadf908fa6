"""Approval services: which policy holds a call, requests with redacted arguments, and decisions that land
exactly once and only for the request's approvers."""

from __future__ import annotations

import pytest

from hooks.approval import policy_for_call
from hooks.catalog import ActionInfo
from hooks.models import ApprovalRequest
from hooks.services import ApprovalForbidden, approval_cancel, approval_decide, approval_request_create
from platform_core.models import AuditLog, Membership, Role
from tests.factories import ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, ApprovalRequestFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def erp(org):
    connector = ConnectorFactory(
        organization=org, name="erp", auth_type="bearer", auth_secret="tok-SECRET-123"
    )
    return {
        "connector": connector,
        "pay": ConnectorActionFactory(connector=connector, name="pay", method="POST", path_template="/pay"),
        "list": ConnectorActionFactory(connector=connector, name="list", method="GET", path_template="/list"),
    }


def info(action) -> ActionInfo:
    return ActionInfo.from_action(action)


def test_the_first_policy_by_name_whose_condition_holds_decides(org, erp):
    ApprovalPolicyFactory(organization=org, name="b-small", actions=[erp["pay"]], condition="amount > 10")
    ApprovalPolicyFactory(organization=org, name="a-large", actions=[erp["pay"]], condition="amount > 1000")
    assert (
        policy_for_call(organization_id=org.pk, info=info(erp["pay"]), arguments={"amount": 5000}).name
        == "a-large"
    )
    assert (
        policy_for_call(organization_id=org.pk, info=info(erp["pay"]), arguments={"amount": 50}).name
        == "b-small"
    )
    assert policy_for_call(organization_id=org.pk, info=info(erp["pay"]), arguments={"amount": 5}) is None


def test_a_connector_policy_covers_its_write_actions_unless_told_to_cover_reads_too(org, erp):
    policy = ApprovalPolicyFactory(organization=org, connectors=[erp["connector"]])
    assert policy_for_call(organization_id=org.pk, info=info(erp["pay"]), arguments={}) == policy
    assert policy_for_call(organization_id=org.pk, info=info(erp["list"]), arguments={}) is None
    policy.writes_only = False
    policy.save()
    assert policy_for_call(organization_id=org.pk, info=info(erp["list"]), arguments={}) == policy


def test_inactive_and_other_organisations_policies_hold_nothing(org, other_org, erp):
    ApprovalPolicyFactory(organization=org, actions=[erp["pay"]], is_active=False)
    ApprovalPolicyFactory(organization=other_org, connectors=[ConnectorFactory(organization=other_org)])
    assert policy_for_call(organization_id=org.pk, info=info(erp["pay"]), arguments={}) is None


def test_a_stored_condition_that_no_longer_parses_fails_closed(org, erp):
    policy = ApprovalPolicyFactory(organization=org, actions=[erp["pay"]], condition="amount >>> 3")
    assert policy_for_call(organization_id=org.pk, info=info(erp["pay"]), arguments={"amount": 1}) == policy


def test_a_request_stores_redacted_arguments_and_snapshots_the_approvers(org, erp, approver, fake_feishu):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    policy = ApprovalPolicyFactory(
        organization=org,
        actions=[erp["pay"]],
        approver_users=[approver],
        channel=channel,
        timeout_seconds=300,
    )
    approval = approval_request_create(
        organization_id=org.pk,
        policy=policy,
        tool_name="erp__pay",
        arguments={"amount": 1, "note": "bearer tok-SECRET-123", "password": "hunter2"},
        secrets=("tok-SECRET-123",),
    )
    assert approval.arguments == {"amount": 1, "note": "bearer [redacted]", "password": "[redacted]"}
    assert list(approval.approver_users.all()) == [approver] and approval.approver_open_ids == ["ou_boss"]
    assert approval.chat_id == "oc_approvals" and approval.card_status == "queued"
    assert (approval.expires_at - approval.created_at).total_seconds() == 300
    policy.approver_users.clear()  # later policy edits do not change who may decide this request
    assert list(approval.approver_users.all()) == [approver]


def test_without_a_channel_no_card_is_queued(org, erp):
    policy = ApprovalPolicyFactory(organization=org, actions=[erp["pay"]])
    approval = approval_request_create(
        organization_id=org.pk, policy=policy, tool_name="erp__pay", arguments={}
    )
    assert approval.card_status == "none"


def test_a_policy_of_another_organisation_is_refused(org, other_org):
    foreign = ApprovalPolicyFactory(organization=other_org)
    with pytest.raises(ValueError):
        approval_request_create(organization_id=org.pk, policy=foreign, tool_name="x", arguments={})


def test_a_decision_lands_exactly_once_even_from_a_stale_copy(org, approver):
    channel = FeishuChannelFactory(organization=org)
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver], channel=channel)
    stale = ApprovalRequest.objects.unscoped().get(pk=approval.pk)  # loaded while still pending
    first = approval_decide(
        approval=approval, decision="approve", via="feishu", operator_open_id="ou_boss", channel=channel
    )
    second = approval_decide(approval=stale, decision="reject", via="web", actor=approver, comment="late")
    assert first.changed and not second.changed
    assert second.approval.status == "approved" and second.approval.comment == ""
    assert AuditLog.objects.filter(action__startswith="approval.").count() == 1


def test_a_cancelled_request_cannot_be_approved_afterwards(org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    assert approval_cancel(approval=approval) is True
    result = approval_decide(approval=approval, decision="approve", via="web", actor=approver)
    assert not result.changed and result.approval.status == "cancelled"


def test_only_listed_feishu_users_decide_by_card(org):
    channel = FeishuChannelFactory(organization=org)
    approval = ApprovalRequestFactory(organization=org, approver_open_ids=["ou_boss"], channel=channel)
    for operator in ("ou_intern", ""):
        with pytest.raises(ApprovalForbidden):
            approval_decide(
                approval=approval,
                decision="approve",
                via="feishu",
                operator_open_id=operator,
                channel=channel,
            )
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_listed_user_who_lost_the_approver_role_can_no_longer_decide(org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    Membership.objects.filter(user=approver, organization=org).update(role=Role.MEMBER)
    with pytest.raises(ApprovalForbidden):
        approval_decide(approval=approval, decision="approve", via="web", actor=approver)


def test_an_admin_of_another_organisation_cannot_decide(org, other_org):
    approval = ApprovalRequestFactory(organization=org)
    outsider = member_of(other_org, Role.ADMIN, username="gus")
    with pytest.raises(ApprovalForbidden):
        approval_decide(approval=approval, decision="approve", via="web", actor=outsider)


def test_an_unknown_decision_or_channel_is_refused(org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    with pytest.raises(ValueError):
        approval_decide(approval=approval, decision="maybe", via="web", actor=approver)
    with pytest.raises(ValueError):
        approval_decide(approval=approval, decision="approve", via="email", actor=approver)
