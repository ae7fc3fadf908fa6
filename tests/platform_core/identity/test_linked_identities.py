"""Linked identities: a Feishu sign-in links an ``open_id`` for good, an org admin may link one by hand
for their own organisation only, and ``user_for_feishu_open_id`` answers members of the organisation only."""

from __future__ import annotations

import pytest

from platform_core.identity.linked_identities import (
    IdentityLinked,
    IdentityNotMember,
    IdentityTaken,
    feishu_open_ids_for_users,
    identity_link_feishu_by_hand,
    link_feishu_identity,
    user_for_feishu_open_id,
)
from platform_core.models import AuditLog, LinkedIdentity, Role
from tests.factories import MembershipFactory, UserFactory, member_of

pytestmark = pytest.mark.django_db


def test_a_feishu_sign_in_links_the_open_id_and_the_click_is_matched_to_the_member(org, other_org):
    ada = member_of(org, Role.APPROVER, username="ada")
    identity = link_feishu_identity(ada, open_id="ou_ada", union_id="on_ada", tenant_key="t1")
    again = link_feishu_identity(ada, open_id="ou_ada", union_id="", tenant_key="")

    assert again.pk == identity.pk and again.union_id == "on_ada" and again.last_seen_at is not None
    assert user_for_feishu_open_id(org, "ou_ada") == ada
    assert user_for_feishu_open_id(other_org, "ou_ada") is None  # ada is not a member there
    assert user_for_feishu_open_id(org, "ou_nobody") is None
    assert user_for_feishu_open_id(org, "") is None


def test_a_link_made_by_hand_counts_only_in_the_organisation_that_made_it(org, other_org, org_admin):
    both = member_of(org, Role.MEMBER, username="bo")
    MembershipFactory(organization=other_org, user=both, role=Role.APPROVER)

    outcome = identity_link_feishu_by_hand(organization=org, actor=org_admin, user=both, open_id=" ou_bo ")

    assert isinstance(outcome, IdentityLinked) and outcome.identity.open_id == "ou_bo"
    assert user_for_feishu_open_id(org, "ou_bo") == both
    assert user_for_feishu_open_id(other_org, "ou_bo") is None
    assert feishu_open_ids_for_users(org, [both.pk]) == {both.pk: "ou_bo"}
    assert feishu_open_ids_for_users(other_org, [both.pk]) == {}
    entry = AuditLog.objects.get(action="linked_identity.created")
    assert entry.organization == org and entry.actor == org_admin and entry.after["open_id"] == "ou_bo"


def test_linking_by_hand_refuses_non_members_and_an_open_id_someone_else_has(org, org_admin, other_org):
    stranger = UserFactory(username="stranger")
    ada = member_of(org, Role.MEMBER, username="ada2")
    link_feishu_identity(UserFactory(username="owner_of_it"), open_id="ou_taken")

    assert isinstance(
        identity_link_feishu_by_hand(organization=org, actor=org_admin, user=stranger, open_id="ou_x"),
        IdentityNotMember,
    )
    assert isinstance(
        identity_link_feishu_by_hand(organization=org, actor=org_admin, user=ada, open_id="ou_taken"),
        IdentityTaken,
    )
    assert not LinkedIdentity.objects.filter(subject="ou_x").exists()


def test_signing_in_with_feishu_takes_over_a_link_made_by_hand(org, org_admin):
    wrong = member_of(org, Role.MEMBER, username="wrong")
    right = member_of(org, Role.MEMBER, username="right")
    identity_link_feishu_by_hand(organization=org, actor=org_admin, user=wrong, open_id="ou_r")

    link_feishu_identity(right, open_id="ou_r")

    assert user_for_feishu_open_id(org, "ou_r") == right
    assert LinkedIdentity.objects.get(subject="ou_r").organization is None
