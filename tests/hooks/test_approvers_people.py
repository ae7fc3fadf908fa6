"""Approvers are people: a policy names users and roles; a Feishu click (signed, encrypted, through the
real callback view) is matched to the platform user through the clicker's linked Feishu identity and
decides only when that user is one of the request's approvers (or the open_id itself is listed, for a
person without a platform account); anyone else changes nothing. The card names people, not open_ids."""

from __future__ import annotations

import json

import pytest

from hooks.delivery import card_send_attempt
from hooks.models import ApprovalRequest
from hooks.services import approval_request_create
from platform_core.identity.linked_identities import identity_link_feishu_by_hand, link_feishu_identity
from platform_core.models import AuditLog, Role
from tests.factories import MembershipFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def channel(org, fake_feishu):
    return FeishuChannelFactory(
        organization=org, base_url=fake_feishu.base_url, default_chat_id="oc_approvals"
    )


@pytest.fixture
def lee(org):
    user = member_of(org, Role.APPROVER, username="lee", first_name="Lee", last_name="Chen")
    link_feishu_identity(user, open_id="ou_lee", union_id="on_lee", tenant_key="tk")
    return user


def ask(org, channel, **policy_fields) -> ApprovalRequest:
    policy_fields.setdefault("approver_open_ids", [])
    policy = ApprovalPolicyFactory(organization=org, channel=channel, **policy_fields)
    approval = approval_request_create(
        organization_id=org.pk, policy=policy, tool_name="erp__create_payment", arguments={"amount": 60000}
    )
    assert card_send_attempt(approval_id=approval.pk).done
    approval.refresh_from_db()
    return approval


def click(fake_feishu, wsgi, channel, approval, open_id, decision="approve"):
    return fake_feishu.click(
        f"http://testserver/integrations/feishu/{channel.pk}/callback/",
        client=wsgi,
        approval_id=str(approval.pk),
        operator_open_id=open_id,
        decision=decision,
    )


def card_text(fake_feishu, approval) -> str:
    return json.dumps(fake_feishu.messages[approval.feishu_message_id].card, ensure_ascii=False)


def test_a_click_by_a_listed_approver_matched_through_the_linked_identity_decides(
    org, channel, lee, fake_feishu, wsgi
):
    approval = ask(org, channel, approver_users=[lee])
    pending = card_text(fake_feishu, approval)
    assert "Lee Chen" in pending and "ou_lee" not in pending  # names, not open_ids
    assert '"tag": "button"' in pending  # Lee can decide on the card through the linked account

    status, reply = click(fake_feishu, wsgi, channel, approval, "ou_lee")

    assert status == 200 and reply["toast"] == {"type": "success", "content": "Approved."}
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by == lee
    assert approval.decided_by_open_id == "ou_lee" and approval.decided_via == "feishu"
    entry = AuditLog.objects.get(action="approval.approved")
    assert entry.actor == lee and entry.after["decided_by"] == "Lee Chen"
    decided = card_text(fake_feishu, approval)
    assert "Lee Chen" in decided and "ou_lee" not in decided


@pytest.mark.parametrize("who", ["stranger", "unlisted_member", "other_org_member"])
def test_a_click_by_anyone_else_changes_nothing_and_says_why(
    org, other_org, channel, lee, fake_feishu, wsgi, who
):
    mia = member_of(org, Role.APPROVER, username="mia")
    link_feishu_identity(mia, open_id="ou_mia")
    gus = member_of(other_org, Role.ADMIN, username="gus")
    link_feishu_identity(gus, open_id="ou_gus")
    approval = ask(org, channel, approver_users=[lee])
    open_id = {"stranger": "ou_nobody", "unlisted_member": "ou_mia", "other_org_member": "ou_gus"}[who]

    status, reply = click(fake_feishu, wsgi, channel, approval, open_id)

    assert status == 200 and reply["toast"] == {
        "type": "error",
        "content": "You are not an approver of this request; nothing was changed.",
    }
    approval.refresh_from_db()
    assert approval.status == "pending" and approval.decided_by is None
    assert not AuditLog.objects.filter(action__startswith="approval.").exists()


def test_a_member_holding_a_listed_role_decides_on_the_card(org, channel, lee, fake_feishu, wsgi):
    ada = member_of(org, Role.ADMIN, username="ada", first_name="Ada", last_name="Lovelace")
    link_feishu_identity(ada, open_id="ou_ada")
    approval = ask(org, channel, approver_roles=["admin"])

    assert "Ada Lovelace" in card_text(fake_feishu, approval)
    assert click(fake_feishu, wsgi, channel, approval, "ou_lee")[1]["toast"]["type"] == "error"
    status, reply = click(fake_feishu, wsgi, channel, approval, "ou_ada", decision="reject")

    assert reply["toast"] == {"type": "success", "content": "Rejected."}
    approval.refresh_from_db()
    assert approval.status == "rejected" and approval.decided_by == ada


def test_a_raw_open_id_still_decides_for_a_person_without_a_platform_account(
    org, channel, lee, fake_feishu, wsgi
):
    approval = ask(org, channel, approver_users=[lee], approver_open_ids=["ou_boss"])
    assert "Feishu user ou_boss" in card_text(fake_feishu, approval)

    status, reply = click(fake_feishu, wsgi, channel, approval, "ou_boss")

    assert reply["toast"]["type"] == "success"
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by is None
    assert approval.decided_by_open_id == "ou_boss"


def test_a_link_made_by_hand_in_another_organisation_does_not_count_here(
    org, other_org, channel, fake_feishu, wsgi, other_admin
):
    both = member_of(org, Role.APPROVER, username="both")
    MembershipFactory(organization=other_org, user=both, role=Role.APPROVER)
    identity_link_feishu_by_hand(organization=other_org, actor=other_admin, user=both, open_id="ou_both")
    approval = ask(org, channel, approver_users=[both])

    assert '"tag": "button"' not in card_text(fake_feishu, approval)  # nobody can decide on the card
    assert click(fake_feishu, wsgi, channel, approval, "ou_both")[1]["toast"]["type"] == "error"
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_link_made_by_hand_within_the_cooldown_cannot_decide_by_card(
    org, channel, org_admin, fake_feishu, wsgi
):
    org.approval_config_cooldown_hours = 24
    org.save()
    kim = member_of(org, Role.APPROVER, username="kim")
    identity_link_feishu_by_hand(organization=org, actor=org_admin, user=kim, open_id="ou_kim")
    approval = ask(org, channel, approver_users=[kim])

    status, reply = click(fake_feishu, wsgi, channel, approval, "ou_kim")

    assert reply["toast"]["type"] == "error" and "separation of duties" in reply["toast"]["content"]
    approval.refresh_from_db()
    assert approval.status == "pending"
