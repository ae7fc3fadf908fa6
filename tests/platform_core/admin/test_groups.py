"""The member groups' admin page (issue 34): an org admin creates, changes and deletes groups of their
organisation's members through the group services (audited); someone who is no member of the group's
organisation, a taken name, another organisation's group are refused."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from platform_core.models import AuditLog, MemberGroup, Membership, Role
from tests.factories import PASSWORD, MemberGroupFactory, member_of

pytestmark = pytest.mark.django_db

ADD = "admin:platform_core_membergroup_add"
CHANGE = "admin:platform_core_membergroup_change"
CHANGELIST = "admin:platform_core_membergroup_changelist"


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def _actions(org) -> list[str]:
    rows = AuditLog.objects.for_org(org).filter(action__startswith="member_group.").order_by("id")
    return list(rows.values_list("action", flat=True))


def test_an_org_admin_creates_changes_and_deletes_a_group_audited(admin_client, org, org_admin, member):
    created = admin_client.post(
        reverse(ADD), {"organization": org.pk, "name": "finance", "description": "", "members": [member.pk]}
    )
    assert created.status_code == 302, created.context["adminform"].form.errors
    group = MemberGroup.objects.for_org(org).get()
    assert list(group.members.all()) == [member]

    changed = admin_client.post(
        reverse(CHANGE, args=[group.pk]), {"name": "treasury", "description": "", "members": [org_admin.pk]}
    )
    assert changed.status_code == 302, changed.context["adminform"].form.errors
    group.refresh_from_db()
    assert group.name == "treasury" and list(group.members.all()) == [org_admin]

    deleted = admin_client.post(
        reverse(CHANGELIST), {"action": "delete_selected", ACTION_CHECKBOX_NAME: [group.pk], "post": "yes"}
    )
    assert deleted.status_code == 302
    assert not MemberGroup.objects.for_org(org).exists()
    assert _actions(org) == ["member_group.created", "member_group.updated", "member_group.deleted"]
    assert (
        AuditLog.objects.for_org(org).filter(action__startswith="member_group.", actor=org_admin).count() == 3
    )


def test_a_member_of_another_organisation_is_refused_even_to_an_admin_of_both(
    admin_client, org, other_org, org_admin
):
    Membership.objects.create(organization=other_org, user=org_admin, role=Role.ADMIN)
    gina = member_of(other_org, Role.MEMBER, username="gina")

    response = admin_client.post(
        reverse(ADD), {"organization": org.pk, "name": "finance", "description": "", "members": [gina.pk]}
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors["members"] == [
        "Only members of the organisation can be put in a group."
    ]
    assert not MemberGroup.objects.for_org(org).exists() and _actions(org) == []


def test_a_taken_name_is_a_form_error_on_the_name(admin_client, org):
    MemberGroupFactory(organization=org, name="finance")
    board = MemberGroupFactory(organization=org, name="board")

    added = admin_client.post(reverse(ADD), {"organization": org.pk, "name": "finance", "description": ""})
    renamed = admin_client.post(reverse(CHANGE, args=[board.pk]), {"name": "finance", "description": ""})

    for response in (added, renamed):
        assert response.status_code == 200
        assert "name" in response.context["adminform"].form.errors
    board.refresh_from_db()
    assert board.name == "board" and _actions(org) == []


def test_another_organisations_group_cannot_be_opened_or_changed(admin_client, org, other_org, other_admin):
    foreign = MemberGroupFactory(organization=other_org, name="globex-board", members=[other_admin])

    opened = admin_client.get(reverse(CHANGE, args=[foreign.pk]))
    changed = admin_client.post(reverse(CHANGE, args=[foreign.pk]), {"name": "taken-over", "description": ""})

    assert opened.status_code in (302, 404) and b"globex-board" not in opened.content
    assert changed.status_code in (302, 403, 404)
    foreign.refresh_from_db()
    assert foreign.name == "globex-board" and list(foreign.members.all()) == [other_admin]
