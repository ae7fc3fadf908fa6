"""``/api/v1/orgs/<slug>/groups/`` (issue 34): members list and read the organisation's groups, owners
and admins create, change and delete them and add and remove their members, audited; who is in a group
is shown to admins only; only members of the organisation can be put in one; another organisation's
groups are 404 on every route; API keys are held to their scopes."""

from __future__ import annotations

import json

import pytest

from platform_core.models import ApiKeyScope, AuditLog, MemberGroup, Role
from tests.factories import MemberGroupFactory, UserFactory, member_of

pytestmark = pytest.mark.django_db


def groups_url(org, group=None, action="") -> str:
    url = f"/api/v1/orgs/{org.slug}/groups/"
    if group is not None:
        url += f"{group.pk}/"
    return url + (f"{action}/" if action else "")


def _actions(org) -> list[str]:
    rows = AuditLog.objects.for_org(org).filter(action__startswith="member_group.").order_by("id")
    return list(rows.values_list("action", flat=True))


def test_an_admin_creates_changes_and_deletes_a_group_audited(client_for, org, org_admin, member):
    client = client_for(org_admin)
    nina = member_of(org, Role.MEMBER, username="nina")

    created = client.post(
        groups_url(org), {"name": "finance", "description": "Pays", "members": [member.pk]}, format="json"
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "finance" and body["members"] == [member.pk] and body["member_count"] == 1
    group = MemberGroup.objects.for_org(org).get(pk=body["id"])

    patched = client.patch(
        groups_url(org, group), {"name": "treasury", "members": [member.pk, nina.pk]}, format="json"
    )
    assert patched.status_code == 200
    assert patched.json()["name"] == "treasury" and sorted(patched.json()["members"]) == sorted(
        [member.pk, nina.pk]
    )

    removed = client.post(groups_url(org, group, "remove-members"), {"members": [member.pk]}, format="json")
    assert removed.status_code == 200 and removed.json()["members"] == [nina.pk]
    added = client.post(groups_url(org, group, "add-members"), {"members": [member.pk]}, format="json")
    assert added.status_code == 200 and added.json()["member_count"] == 2

    assert client.delete(groups_url(org, group)).status_code == 204
    assert not MemberGroup.objects.for_org(org).exists()
    assert _actions(org) == [
        "member_group.created",
        "member_group.updated",
        "member_group.members_removed",
        "member_group.members_added",
        "member_group.deleted",
    ]
    assert set(
        AuditLog.objects.filter(action__startswith="member_group.").values_list("actor", flat=True)
    ) == {org_admin.pk}


def test_members_list_and_read_the_groups_but_not_who_is_in_them(client_for, org, org_admin, member):
    group = MemberGroupFactory(organization=org, name="finance", members=[member, org_admin])
    client = client_for(member)

    listed = client.get(groups_url(org)).json()["results"]
    assert [(g["name"], g["member_count"]) for g in listed] == [("finance", 2)]
    assert "members" not in listed[0]
    read = client.get(groups_url(org, group))
    assert read.status_code == 200 and "members" not in read.json()
    assert sorted(client_for(org_admin).get(groups_url(org, group)).json()["members"]) == sorted(
        [member.pk, org_admin.pk]
    )


@pytest.mark.parametrize("role", [Role.MEMBER, Role.APPROVER])
def test_only_owners_and_admins_change_groups(client_for, org, org_admin, role):
    user = member_of(org, role, username=f"{role}-user")
    group = MemberGroupFactory(organization=org, name="finance", members=[org_admin])
    client = client_for(user)

    writes = [
        ("post", groups_url(org), {"name": "mine", "members": [user.pk]}),
        ("patch", groups_url(org, group), {"name": "mine", "members": [user.pk]}),
        ("post", groups_url(org, group, "add-members"), {"members": [user.pk]}),
        ("post", groups_url(org, group, "remove-members"), {"members": [org_admin.pk]}),
        ("delete", groups_url(org, group), {}),
    ]
    for method, url, data in writes:
        assert getattr(client, method)(url, data, format="json").status_code == 403, (method, url)
    group.refresh_from_db()
    assert group.name == "finance" and list(group.members.all()) == [org_admin]
    assert [g.name for g in MemberGroup.objects.for_org(org)] == ["finance"]
    assert _actions(org) == []


def test_only_members_of_the_organisation_can_be_put_in_a_group(
    client_for, org, org_admin, member, other_admin
):
    stranger = UserFactory(username="stranger")
    group = MemberGroupFactory(organization=org, name="finance", members=[member])
    client = client_for(org_admin)
    message = "Only members of the organisation can be put in a group."

    for user_id in (other_admin.pk, stranger.pk, 999_999):  # another organisation's, nobody's, no user
        created = client.post(groups_url(org), {"name": "board", "members": [user_id]}, format="json")
        assert created.status_code == 400 and created.json()["members"] == [message], created.content
        patched = client.patch(groups_url(org, group), {"members": [user_id]}, format="json")
        assert patched.status_code == 400 and patched.json()["members"] == [message]
        added = client.post(groups_url(org, group, "add-members"), {"members": [user_id]}, format="json")
        assert added.status_code == 400 and added.json()["members"] == [message]
    assert list(group.members.all()) == [member]
    assert [g.name for g in MemberGroup.objects.for_org(org)] == ["finance"]


def test_the_refusal_reads_in_chinese(client_for, org, org_admin, other_admin):
    response = client_for(org_admin).post(
        groups_url(org),
        {"name": "board", "members": [other_admin.pk]},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )

    assert response.status_code == 400
    assert any("\u4e00" <= ch <= "\u9fff" for ch in response.json()["members"][0])


def test_a_taken_name_is_a_field_error(client_for, org, org_admin, other_org):
    MemberGroupFactory(organization=org, name="finance")
    MemberGroupFactory(organization=other_org, name="board")
    board = MemberGroupFactory(organization=org, name="board")
    client = client_for(org_admin)

    taken = client.post(groups_url(org), {"name": "finance"}, format="json")
    assert taken.status_code == 400 and "name" in taken.json()
    renamed = client.patch(groups_url(org, board), {"name": "finance"}, format="json")
    assert renamed.status_code == 400 and "name" in renamed.json()
    assert client.patch(groups_url(org, board), {"name": "board"}, format="json").status_code == 200


GROUP_ROUTES = [
    ("get", ""),
    ("patch", ""),
    ("delete", ""),
    ("post", "add-members"),
    ("post", "remove-members"),
]


@pytest.mark.cross_org(
    "member-group-list", "member-group-detail", "member-group-add-members", "member-group-remove-members"
)
def test_another_organisations_groups_are_404_on_every_route_and_unlisted(
    client_for, org, org_admin, other_org, other_admin
):
    member_of(other_org, Role.MEMBER, username="gina")
    foreign = MemberGroupFactory(organization=other_org, name="globex-board", members=[other_admin])
    own = MemberGroupFactory(organization=org, name="finance", members=[org_admin])
    client = client_for(org_admin)

    listed = client.get(groups_url(org))
    assert [g["name"] for g in listed.json()["results"]] == ["finance"]
    assert client.get(groups_url(other_org)).status_code == 404  # org A's admin cannot list org B's groups
    for method, action in GROUP_ROUTES:
        data = {"name": "taken-over", "members": [org_admin.pk]}
        through_ours = getattr(client, method)(groups_url(org, foreign, action), data, format="json")
        assert through_ours.status_code == 404, (method, action)
        assert b"globex" not in through_ours.content
        through_theirs = getattr(client, method)(groups_url(other_org, foreign, action), data, format="json")
        assert through_theirs.status_code == 404 and b"globex" not in through_theirs.content
        # Another organisation's admin, through our slug and our group's id: the organisation is missing.
        theirs = getattr(client_for(other_admin), method)(groups_url(org, own, action), data, format="json")
        assert theirs.status_code == 404
    foreign.refresh_from_db()
    own.refresh_from_db()
    assert foreign.name == "globex-board" and list(foreign.members.all()) == [other_admin]
    assert own.name == "finance" and list(own.members.all()) == [org_admin]
    assert _actions(org) == [] and _actions(other_org) == []


def test_a_member_of_one_organisation_cannot_list_anothers_groups(client_for, org, member, other_org):
    MemberGroupFactory(organization=other_org, name="globex-board")

    response = client_for(member).get(groups_url(other_org))

    assert response.status_code == 404 and b"globex-board" not in response.content


def test_an_api_key_reads_with_the_read_scope_and_changes_only_with_the_admin_scope(client, org, org_admin):
    from platform_core.identity.api_keys.keys import api_key_create

    group = MemberGroupFactory(organization=org, name="finance")

    def bearer(scopes) -> dict:
        raw = api_key_create(owner=org_admin, name="-".join(scopes), scopes=scopes, actor=org_admin).raw
        return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}

    read = bearer([ApiKeyScope.READ])
    assert client.get(groups_url(org), **read).status_code == 200
    assert (
        client.patch(
            groups_url(org, group), {"name": "x"}, content_type="application/json", **read
        ).status_code
        == 403
    )
    admin = bearer([ApiKeyScope.READ, ApiKeyScope.ADMIN])
    changed = client.patch(
        groups_url(org, group), {"name": "treasury"}, content_type="application/json", **admin
    )
    assert changed.status_code == 200 and changed.json()["name"] == "treasury"


def test_the_list_answers_in_the_same_number_of_queries_for_many_groups(
    client_for, org, org_admin, member, django_assert_num_queries
):
    for n in range(2):
        MemberGroupFactory(organization=org, name=f"g{n}", members=[member, org_admin])
    client = client_for(org_admin)
    client.get(groups_url(org))  # the key's first use writes its last-use rows
    with django_assert_num_queries(6) as few:
        client.get(groups_url(org))
    for n in range(2, 8):
        MemberGroupFactory(organization=org, name=f"g{n}", members=[member, org_admin])
    with django_assert_num_queries(len(few.captured_queries)):
        assert client.get(groups_url(org)).json()["count"] == 8


def test_the_openapi_schema_documents_every_group_route(client_for, member):
    schema = json.loads(client_for(member).get("/api/schema/", {"format": "json"}).content)
    base = "/api/v1/orgs/{org_slug}/groups/"
    routes = {
        path: set(item) - {"parameters"} for path, item in schema["paths"].items() if path.startswith(base)
    }

    assert routes == {
        base: {"get", "post"},
        base + "{id}/": {"get", "patch", "delete"},
        base + "{id}/add-members/": {"post"},
        base + "{id}/remove-members/": {"post"},
    }
    assert {"name", "description", "members", "member_count"} <= set(
        schema["components"]["schemas"]["MemberGroup"]["properties"]
    )
