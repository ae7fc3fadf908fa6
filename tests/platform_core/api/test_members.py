"""Members: owners and admins invite existing users (by exact username or e-mail; they join when they
accept), change roles and remove members through ``/api/v1/orgs/<slug>/members/`` and the admin; only owners touch the owner role, the last owner
stays, every change is audited, and ``is_staff`` follows the role on every path (admin, API, command)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from platform_core.models import AuditLog, Membership, Role
from tests.factories import PASSWORD, MembershipFactory, OrganizationFactory, UserFactory, member_of

pytestmark = pytest.mark.django_db


def members_url(org, membership=None) -> str:
    url = f"/api/v1/orgs/{org.slug}/members/"
    return f"{url}{membership.pk}/" if membership is not None else url


def _membership(org, user) -> Membership:
    return Membership.objects.get(organization=org, user=user)


# --- the API ----------------------------------------------------------------------------------------


def _accept(user) -> None:
    """``user`` accepts their invitation on their Invitations page, signed in (issue 31)."""
    from django.test import Client

    from platform_core.models import MembershipInvitation

    browser = Client()
    browser.force_login(user)
    invitation = MembershipInvitation.objects.unscoped().get(user=user)
    assert browser.post(reverse("invitation-accept", args=[invitation.pk])).status_code == 302


def test_an_admin_invites_by_username_or_email_changes_roles_and_removes_members(client_for, org, org_admin):
    client = client_for(org_admin)
    nina = UserFactory(username="nina", email="Nina@Example.com")
    omar = UserFactory(username="omar")

    by_name = client.post(members_url(org), {"user": "omar", "role": "approver"}, format="json")
    assert by_name.status_code == 202, by_name.content
    assert by_name.json()["username"] == "omar" and by_name.json()["role"] == "approver"
    by_email = client.post(members_url(org), {"user": "nina@example.com"}, format="json")
    assert by_email.status_code == 202 and by_email.json()["role"] == "member"
    assert {m["username"] for m in client.get(members_url(org)).json()["results"]} == {"ada"}
    _accept(omar)
    _accept(nina)

    listed = client.get(members_url(org)).json()["results"]
    assert {m["username"]: m["role"] for m in listed} == {
        "ada": "admin",
        "nina": "member",
        "omar": "approver",
    }

    nina_membership = _membership(org, nina)
    changed = client.patch(members_url(org, nina_membership), {"role": "approver"}, format="json")
    assert changed.status_code == 200 and _membership(org, nina).role == "approver"
    assert client.delete(members_url(org, nina_membership)).status_code == 204
    assert not Membership.objects.filter(pk=nina_membership.pk).exists()

    actions = list(
        AuditLog.objects.filter(
            action__in=["membership.created", "membership.updated", "membership.deleted"]
        ).order_by("id")
    )
    assert [(e.action, e.actor, e.after and e.after.get("role")) for e in actions] == [
        ("membership.created", omar, "approver"),
        ("membership.created", nina, "member"),
        ("membership.updated", org_admin, "approver"),
        ("membership.deleted", org_admin, None),
    ]
    assert actions[2].before == {"user": "nina", "role": "member"}


@pytest.mark.parametrize(
    ("identifier", "problem"),
    [("nobody", "No active user"), ("ada", "already a member"), ("", "")],
)
def test_adding_an_unknown_user_or_an_existing_member_is_a_clear_400(
    client_for, org, org_admin, identifier, problem
):
    response = client_for(org_admin).post(members_url(org), {"user": identifier}, format="json")
    assert response.status_code == 400 and "user" in response.json()
    assert problem in str(response.json()["user"])
    assert not AuditLog.objects.filter(action__startswith="membership.").exists()


def test_a_memberships_user_cannot_be_changed(client_for, org, org_admin, member):
    UserFactory(username="zed")
    response = client_for(org_admin).patch(
        members_url(org, _membership(org, member)), {"user": "zed"}, format="json"
    )
    assert response.status_code == 400 and _membership(org, member).user == member


@pytest.mark.parametrize("role", [Role.MEMBER, Role.APPROVER])
def test_only_owners_and_admins_may_use_the_members_api(client_for, org, role):
    user = member_of(org, role, username=f"{role}-user")
    client = client_for(user)
    assert client.get(members_url(org)).status_code == 403
    assert (
        client.post(members_url(org), {"user": user.username, "role": "admin"}, format="json").status_code
        == 403
    )
    assert (
        client.patch(members_url(org, _membership(org, user)), {"role": "owner"}, format="json").status_code
        == 403
    )
    assert _membership(org, user).role == role


def test_an_admin_can_neither_make_an_owner_nor_demote_or_remove_one(
    client_for, org, org_admin, org_owner, member
):
    client = client_for(org_admin)
    owner = _membership(org, org_owner)
    promoted = client.patch(members_url(org, _membership(org, member)), {"role": "owner"}, format="json")
    demoted = client.patch(members_url(org, owner), {"role": "member"}, format="json")
    removed = client.delete(members_url(org, owner))
    UserFactory(username="newcomer")
    added = client.post(members_url(org), {"user": "newcomer", "role": "owner"}, format="json")
    assert [r.status_code for r in (promoted, demoted, removed, added)] == [403, 403, 403, 403]
    assert "Only an owner" in demoted.json()["detail"]
    assert _membership(org, member).role == Role.MEMBER and _membership(org, org_owner).role == Role.OWNER
    assert not Membership.objects.filter(user__username="newcomer").exists()
    assert not AuditLog.objects.filter(action__startswith="membership.").exists()


def test_an_owner_can_make_another_owner_and_then_step_down(client_for, org, org_owner, org_admin):
    client = client_for(org_owner)
    promoted = client.patch(members_url(org, _membership(org, org_admin)), {"role": "owner"}, format="json")
    assert promoted.status_code == 200
    stepped_down = client.patch(
        members_url(org, _membership(org, org_owner)), {"role": "admin"}, format="json"
    )
    assert stepped_down.status_code == 200 and _membership(org, org_owner).role == Role.ADMIN


def test_the_last_owner_can_neither_leave_nor_be_demoted(client_for, org, org_owner):
    client = client_for(org_owner)
    owner = _membership(org, org_owner)
    demoted = client.patch(members_url(org, owner), {"role": "admin"}, format="json")
    left = client.delete(members_url(org, owner))
    assert demoted.status_code == 409 and left.status_code == 409
    assert "last owner" in left.json()["detail"]
    assert _membership(org, org_owner).role == Role.OWNER


@pytest.mark.cross_org("member-list", "member-detail")
def test_another_organisations_members_are_hidden_and_untouchable(client_for, org, org_admin, other_org):
    foreign = MembershipFactory(organization=other_org, role=Role.MEMBER)
    client = client_for(org_admin)
    assert foreign.user.username not in {
        m["username"] for m in client.get(members_url(org)).json()["results"]
    }
    assert client.get(f"/api/v1/orgs/{org.slug}/members/{foreign.pk}/").status_code == 404
    patched = client.patch(f"/api/v1/orgs/{org.slug}/members/{foreign.pk}/", {"role": "admin"}, format="json")
    assert patched.status_code == 404
    assert client.delete(f"/api/v1/orgs/{org.slug}/members/{foreign.pk}/").status_code == 404
    assert client.get(members_url(other_org)).status_code == 404
    foreign.refresh_from_db()
    assert foreign.role == Role.MEMBER


# --- is_staff follows the role, on every path --------------------------------------------------------


def _change_role_in_admin(org, user, role) -> None:
    owner = member_of(org, Role.OWNER, username="root-owner")
    from django.test import Client

    client = Client()
    assert client.login(username=owner.username, password=PASSWORD)
    membership = _membership(org, user)
    response = client.post(
        reverse("admin:platform_core_membership_change", args=[membership.pk]), {"role": role}
    )
    assert response.status_code == 302, response.context["adminform"].form.errors


def _change_role_in_api(org, user, role, client_for) -> None:
    owner = member_of(org, Role.OWNER, username="root-owner")
    response = client_for(owner).patch(
        members_url(org, _membership(org, user)), {"role": role}, format="json"
    )
    assert response.status_code == 200, response.content


def _change_role_by_command(org, user, role, client_for) -> None:
    call_command("add_member", org.slug, user.username, "--role", role)


@pytest.fixture(params=["admin", "api", "command"])
def change_role(request, client_for):
    def change(org, user, role):
        if request.param == "admin":
            _change_role_in_admin(org, user, role)
        elif request.param == "api":
            _change_role_in_api(org, user, role, client_for)
        else:
            _change_role_by_command(org, user, role, client_for)

    return change


@pytest.mark.parametrize("role", [Role.ADMIN, Role.OWNER])
def test_a_member_promoted_to_admin_or_owner_can_open_the_admin_at_once(org, change_role, role, client):
    user = member_of(org, Role.MEMBER, username="riser")
    assert not user.is_staff
    change_role(org, user, role)
    user.refresh_from_db()
    assert user.is_staff
    assert client.login(username="riser", password=PASSWORD)
    assert client.get(reverse("admin:index")).status_code == 200


def test_a_demoted_admin_loses_the_admin(org, change_role):
    user = member_of(org, Role.ADMIN, username="faller")
    change_role(org, user, Role.MEMBER)
    user.refresh_from_db()
    assert not user.is_staff


def test_a_demoted_admin_who_administers_another_organisation_keeps_the_admin(org, change_role):
    user = member_of(org, Role.ADMIN, username="faller")
    MembershipFactory(organization=OrganizationFactory(slug="elsewhere"), user=user, role=Role.ADMIN)
    change_role(org, user, Role.MEMBER)
    user.refresh_from_db()
    assert user.is_staff


def test_a_demoted_superuser_stays_staff(org, change_role):
    user = member_of(org, Role.ADMIN, username="root", is_superuser=True)
    change_role(org, user, Role.MEMBER)
    user.refresh_from_db()
    assert user.is_staff


def test_a_removed_admin_loses_the_admin(client_for, org, org_owner):
    user = member_of(org, Role.ADMIN, username="leaver")
    assert client_for(org_owner).delete(members_url(org, _membership(org, user))).status_code == 204
    user.refresh_from_db()
    assert not user.is_staff


def test_the_command_refuses_to_demote_the_last_owner(org, org_owner):
    with pytest.raises(CommandError, match="last owner"):
        call_command("add_member", org.slug, org_owner.username, "--role", "member")
    assert _membership(org, org_owner).role == Role.OWNER


# --- the admin ---------------------------------------------------------------------------------------


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_in_the_admin_an_admin_cannot_demote_an_owner_or_make_one(admin_client, org, org_owner, member):
    owner = _membership(org, org_owner)
    demoted = admin_client.post(
        reverse("admin:platform_core_membership_change", args=[owner.pk]), {"role": "member"}
    )
    assert demoted.status_code == 200 and "Only an owner" in str(demoted.context["adminform"].form.errors)
    promoted = admin_client.post(
        reverse("admin:platform_core_membership_change", args=[_membership(org, member).pk]),
        {"role": "owner"},
    )
    assert promoted.status_code == 200
    removed = admin_client.post(
        reverse("admin:platform_core_membership_delete", args=[owner.pk]), {"post": "yes"}
    )
    assert removed.status_code == 403
    assert _membership(org, org_owner).role == Role.OWNER and _membership(org, member).role == Role.MEMBER


def test_in_the_admin_the_last_owner_cannot_leave_or_step_down(client, org, org_owner):
    assert client.login(username=org_owner.username, password=PASSWORD)
    owner = _membership(org, org_owner)
    demoted = client.post(
        reverse("admin:platform_core_membership_change", args=[owner.pk]), {"role": "admin"}
    )
    assert demoted.status_code == 200 and "last owner" in str(demoted.context["adminform"].form.errors)
    removed = client.post(reverse("admin:platform_core_membership_delete", args=[owner.pk]), {"post": "yes"})
    assert removed.status_code == 403
    assert _membership(org, org_owner).role == Role.OWNER
