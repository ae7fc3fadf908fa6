"""Member groups' writes (issue 34): each is one audit row naming the group and its members' ids, never
more; only members of the organisation (people, not organisation keys' service users) can be put in a
group; a name is unique in its organisation only; a member who leaves the organisation leaves its
groups, and the groups' reads give a former member none."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation

from platform_core.identity.groups.selectors import (
    member_group_get_for_org,
    member_group_list_for_org,
    member_groups_of_user,
)
from platform_core.identity.groups.services import (
    member_group_create,
    member_group_delete,
    member_group_members_add,
    member_group_members_remove,
    member_group_update,
)
from platform_core.models import AuditLog, MemberGroup, Membership, Role
from platform_core.services import membership_remove
from tests.factories import MemberGroupFactory, UserFactory, api_key_of_org, member_of

pytestmark = pytest.mark.django_db


def _rows(org) -> list[AuditLog]:
    return list(AuditLog.objects.for_org(org).filter(action__startswith="member_group.").order_by("id"))


def test_each_write_is_one_audit_row_with_names_and_ids_only(org, org_admin, member):
    nina = member_of(org, Role.MEMBER, username="nina")

    group = member_group_create(
        organization=org, name="finance", description="Pays the suppliers", members=[member], actor=org_admin
    )
    member_group_update(group=group, actor=org_admin, name="treasury", description="Keeps the money")
    member_group_members_add(group=group, users=[nina, member], actor=org_admin)
    member_group_members_remove(group=group, user_ids=[member.pk], actor=org_admin)
    member_group_delete(group=group, actor=org_admin)

    rows = _rows(org)
    assert [(row.action, row.actor, row.before, row.after) for row in rows] == [
        ("member_group.created", org_admin, None, {"name": "finance", "members": [str(member.pk)]}),
        (
            "member_group.updated",
            org_admin,
            {"name": "finance"},
            {"name": "treasury", "description": "changed"},
        ),
        ("member_group.members_added", org_admin, None, {"name": "treasury", "members": [str(nina.pk)]}),
        ("member_group.members_removed", org_admin, {"name": "treasury", "members": [str(member.pk)]}, None),
        ("member_group.deleted", org_admin, {"name": "treasury", "members": [str(nina.pk)]}, None),
    ]
    assert all("money" not in str(row.before) + str(row.after) for row in rows)
    assert {row.target_id for row in rows} == {str(group.pk)}
    assert not MemberGroup.objects.for_org(org).exists()


def test_a_change_that_changes_nothing_writes_nothing(org, org_admin, member):
    group = member_group_create(organization=org, name="finance", members=[member], actor=org_admin)

    member_group_update(group=group, actor=org_admin, name="finance", description="", members=[member])
    member_group_members_add(group=group, users=[member], actor=org_admin)
    member_group_members_remove(group=group, user_ids=[org_admin.pk], actor=org_admin)

    assert [row.action for row in _rows(org)] == ["member_group.created"]


def test_setting_the_members_records_both_lists(org, org_admin, member):
    group = member_group_create(organization=org, name="finance", members=[member], actor=org_admin)

    member_group_update(group=group, actor=org_admin, members=[org_admin])

    row = _rows(org)[-1]
    assert row.before == {"members": [str(member.pk)]} and row.after == {"members": [str(org_admin.pk)]}
    assert list(group.members.all()) == [org_admin]


@pytest.mark.parametrize("who", ["stranger", "other_org_member", "service_user"])
def test_only_members_of_the_organisation_can_be_put_in_a_group(org, other_org, org_admin, member, who):
    outsider = {
        "stranger": lambda: UserFactory(username="stranger"),
        "other_org_member": lambda: member_of(other_org, Role.MEMBER, username="gina"),
        "service_user": lambda: api_key_of_org(org).user,
    }[who]()
    group = member_group_create(organization=org, name="finance", members=[member], actor=org_admin)

    with pytest.raises(ValidationError) as created:
        member_group_create(organization=org, name="board", members=[member, outsider], actor=org_admin)
    with pytest.raises(ValidationError) as set_:
        member_group_update(group=group, actor=org_admin, members=[outsider])
    with pytest.raises(ValidationError) as added:
        member_group_members_add(group=group, users=[outsider], actor=org_admin)

    for refused in (created, set_, added):
        assert refused.value.message_dict == {
            "members": ["Only members of the organisation can be put in a group."]
        }
    assert list(group.members.all()) == [member]
    assert [g.name for g in MemberGroup.objects.for_org(org)] == ["finance"]
    assert [row.action for row in _rows(org)] == ["member_group.created"]


def test_the_refusal_reads_in_chinese(org, org_admin, other_admin):
    with translation.override("zh-hans"), pytest.raises(ValidationError) as refused:
        member_group_create(organization=org, name="finance", members=[other_admin], actor=org_admin)

    assert any("\u4e00" <= ch <= "\u9fff" for ch in refused.value.message_dict["members"][0])


def test_a_name_is_unique_in_its_organisation_only(org, other_org, org_admin, other_admin):
    group = member_group_create(organization=org, name="finance", actor=org_admin)
    member_group_create(organization=other_org, name="finance", actor=other_admin)
    board = member_group_create(organization=org, name="board", actor=org_admin)

    with pytest.raises(ValidationError) as taken:
        member_group_create(organization=org, name=" finance ", actor=org_admin)
    assert "already has a group of this name" in taken.value.message_dict["name"][0]
    with pytest.raises(ValidationError):
        member_group_update(group=board, actor=org_admin, name="finance")
    with pytest.raises(ValidationError) as empty:
        member_group_create(organization=org, name="  ", actor=org_admin)
    assert "name" in empty.value.message_dict

    member_group_update(group=group, actor=org_admin, name="finance")  # its own name is no clash
    board.refresh_from_db()
    assert board.name == "board"


def test_a_member_who_leaves_the_organisation_leaves_its_groups_and_no_other(
    org, other_org, org_admin, member
):
    Membership.objects.create(organization=other_org, user=member, role=Role.MEMBER)
    finance = MemberGroupFactory(organization=org, name="finance", members=[member, org_admin])
    board = MemberGroupFactory(organization=org, name="board", members=[member])
    elsewhere = MemberGroupFactory(organization=other_org, name="finance", members=[member])

    membership_remove(membership=Membership.objects.get(organization=org, user=member), actor=org_admin)

    assert list(finance.members.all()) == [org_admin] and not board.members.exists()
    assert list(elsewhere.members.all()) == [member]
    row = AuditLog.objects.for_org(org).get(action="membership.deleted")
    assert row.before == {"user": "mia", "role": "member", "groups": ["board", "finance"]}


def test_a_member_in_no_group_leaves_with_the_usual_audit_row(org, org_admin, member):
    membership_remove(membership=Membership.objects.get(organization=org, user=member), actor=org_admin)

    row = AuditLog.objects.for_org(org).get(action="membership.deleted")
    assert row.before == {"user": "mia", "role": "member"}


def test_the_reads_are_scoped_to_the_organisation_and_to_current_members(org, other_org, org_admin, member):
    finance = MemberGroupFactory(organization=org, name="finance", members=[member, org_admin])
    foreign = MemberGroupFactory(organization=other_org, name="globex")

    assert [(g.name, g.member_count) for g in member_group_list_for_org(organization=org)] == [("finance", 2)]
    assert member_group_get_for_org(organization=org, group_id=finance.pk) == finance
    assert member_group_get_for_org(organization=org, group_id=foreign.pk) is None
    assert member_group_get_for_org(organization=org, group_id="not-a-number") is None
    assert list(member_groups_of_user(organization=org, user=member)) == [finance]

    Membership.objects.filter(organization=org, user=member).delete()  # a row left behind in the group

    assert list(member_groups_of_user(organization=org, user=member)) == []
