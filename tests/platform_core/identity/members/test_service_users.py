"""Issue 31: an organisation API key's service user is no person. It is not listed among members (the
API, the Members page, the admin; it is listed under API keys), its membership cannot be changed there
(that would change what the key may do), and it can be neither added nor invited to any organisation
(the API, the Members page, the admin, ``add_member``)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from platform_core.identity.api_keys.keys import api_key_create
from platform_core.models import Membership, MembershipInvitation, Role
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def service_user(org, org_admin):
    created = api_key_create(name="ERP sync", scopes=["read", "chat"], actor=org_admin, organization=org)
    return created.key.user


def _service_membership(org, service_user) -> Membership:
    return Membership.objects.get(organization=org, user=service_user)


def test_the_members_api_neither_lists_nor_changes_a_service_user(client_for, org, org_admin, service_user):
    api = client_for(org_admin)
    own = _service_membership(org, service_user)
    base = f"/api/v1/orgs/{org.slug}/members/"

    listed = {m["username"] for m in api.get(base).json()["results"]}
    assert listed == {"ada"}
    assert api.get(f"{base}{own.pk}/").status_code == 404
    assert api.patch(f"{base}{own.pk}/", {"role": "admin"}, format="json").status_code == 404
    assert api.delete(f"{base}{own.pk}/").status_code == 404
    assert _service_membership(org, service_user).role == Role.MEMBER


@pytest.mark.parametrize("where", ["own", "other"])
def test_the_members_api_cannot_add_a_service_user_to_any_org(
    client_for, org, org_admin, other_org, other_admin, service_user, where
):
    api, target = (client_for(org_admin), org) if where == "own" else (client_for(other_admin), other_org)

    reply = api.post(
        f"/api/v1/orgs/{target.slug}/members/",
        {"user": service_user.username, "role": "admin"},
        format="json",
    )

    assert reply.status_code == 400 and "user" in reply.json()
    assert not Membership.objects.filter(organization=other_org, user=service_user).exists()
    assert not MembershipInvitation.objects.unscoped().exists()


def test_the_members_page_cannot_change_or_remove_a_service_user(client, org, org_admin, service_user):
    assert client.login(username=org_admin.username, password=PASSWORD)
    own = _service_membership(org, service_user)
    kwargs = {"org_slug": org.slug, "membership_id": own.pk}

    assert client.post(reverse("members-set-role", kwargs=kwargs), {"role": "admin"}).status_code == 404
    assert client.post(reverse("members-remove", kwargs=kwargs)).status_code == 404
    assert _service_membership(org, service_user).role == Role.MEMBER


def test_the_admin_neither_lists_nor_changes_a_service_user(client, org, org_admin, service_user):
    client.force_login(org_admin)
    own = _service_membership(org, service_user)

    listed = client.get(reverse("admin:platform_core_membership_changelist"))
    assert service_user.username not in listed.content.decode()
    client.post(reverse("admin:platform_core_membership_change", args=[own.pk]), {"role": Role.ADMIN})
    client.post(reverse("admin:platform_core_membership_delete", args=[own.pk]), {"post": "yes"})
    assert _service_membership(org, service_user).role == Role.MEMBER


@pytest.mark.parametrize("superuser", [False, True], ids=["org-admin", "superuser"])
def test_the_admin_cannot_invite_a_service_user(client, org, other_org, other_admin, service_user, superuser):
    from tests.factories import UserFactory

    actor = UserFactory(username="root", is_superuser=True, is_staff=True) if superuser else other_admin
    client.force_login(actor)

    page = client.post(
        reverse("admin:platform_core_membershipinvitation_add"),
        {
            "user": service_user.pk if superuser else service_user.username,
            "organization": other_org.pk,
            "role": Role.MEMBER,
        },
    )

    assert page.status_code == 200 and "user" in page.context["adminform"].form.errors
    assert not MembershipInvitation.objects.unscoped().exists()


def test_add_member_refuses_a_service_user_and_changes_nothing(org, other_org, service_user):
    with pytest.raises(CommandError, match="API key"):
        call_command("add_member", other_org.slug, service_user.username, "--role", "admin")
    with pytest.raises(CommandError, match="API key"):
        call_command(
            "add_member", org.slug, service_user.username, "--role", "admin", "--password", "pw-123456"
        )
    service_user.refresh_from_db()
    assert not service_user.has_usable_password()  # nobody can sign in as the key
    assert not Membership.objects.filter(organization=other_org, user=service_user).exists()
    assert _service_membership(org, service_user).role == Role.MEMBER


def test_the_members_page_cannot_invite_a_service_user_by_e_mail_or_identity(
    client, org, other_org, service_user
):
    from platform_core.identity.linked_identities import link_feishu_identity
    from tests.factories import member_of

    service_user.email = "erp-sync@acme.example"  # however it got one
    service_user.save(update_fields=["email"])
    link_feishu_identity(service_user, open_id="ou_erp_sync")
    globex_admin = member_of(other_org, Role.ADMIN, username="gina")
    assert client.login(username=globex_admin.username, password=PASSWORD)

    client.post(
        reverse("members-invite", kwargs={"org_slug": other_org.slug}),
        {"email": "erp-sync@acme.example", "role": "admin"},
    )
    client.post(
        reverse("members-add-identity", kwargs={"org_slug": other_org.slug}),
        {"identifier": "ou_erp_sync", "role": "admin"},
    )

    assert not MembershipInvitation.objects.unscoped().filter(user=service_user).exists()
    assert not Membership.objects.filter(organization=other_org, user=service_user).exists()
