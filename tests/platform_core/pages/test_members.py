"""The web app's Members page: owners and admins list members, invite by e-mail (a new address gets an
account and a one-time set-password link; an existing account is invited and joins when it accepts),
invite someone who signed in with Feishu or single sign-on,
change roles, remove and link Feishu accounts; every change is audited, everything is scoped to the URL's
organisation, and the last owner can neither be removed nor demoted."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from platform_core.identity.linked_identities import identity_link_feishu_by_hand, link_feishu_identity
from platform_core.models import AuditLog, LinkedIdentity, Membership, MembershipInvitation, Role
from tests.factories import PASSWORD, MembershipFactory, UserFactory, member_of

pytestmark = pytest.mark.django_db


def page(org) -> str:
    return reverse("members-page", kwargs={"org_slug": org.slug})


def url(name: str, org, membership=None) -> str:
    kwargs = {"org_slug": org.slug}
    if membership is not None:
        kwargs["membership_id"] = membership.pk
    return reverse(name, kwargs=kwargs)


@pytest.fixture
def as_admin(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def roles(org) -> dict[str, str]:
    return dict(Membership.objects.filter(organization=org).values_list("user__username", "role"))


def invited(org) -> dict[str, str]:
    return dict(
        MembershipInvitation.objects.unscoped().filter(organization=org).values_list("user__username", "role")
    )


def actions() -> list[str]:
    return list(AuditLog.objects.order_by("id").values_list("action", flat=True))


def test_the_page_lists_members_for_admins_only(client, org, org_admin, member, other_org, other_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    response = client.get(page(org))
    assert response.status_code == 200
    assert {m.user.username for m in response.context["members"]} == {"ada", "mia"}
    assert f'href="{page(org)}"' in response.content.decode()  # the top bar links the page
    assert client.get(page(other_org)).status_code == 404  # not a member there

    assert client.login(username=member.username, password=PASSWORD)
    assert client.get(page(org)).status_code == 403
    assert f'href="{page(org)}"' not in client.get(reverse("home")).content.decode()


def test_inviting_a_new_address_creates_the_account_and_a_one_time_set_password_link(
    as_admin, org, client, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = as_admin.post(
            url("members-invite", org), {"email": "Nina@Example.com", "role": "approver"}
        )

    assert response.status_code == 200
    link = response.context["invited"].set_password_url
    assert link.startswith("http://testserver/o/acme/members/join/") and link in response.content.decode()
    nina = get_user_model().objects.get(email="Nina@Example.com")
    assert not nina.has_usable_password() and roles(org)["nina@example.com"] == "approver"
    assert actions() == ["membership.created", "membership.invited"]
    assert len(mail.outbox) == 1 and link in mail.outbox[0].body and mail.outbox[0].to == ["Nina@Example.com"]
    assert as_admin.get(page(org)).content.decode().count(link) == 0  # shown once

    client.logout()
    form = client.get(link, follow=True)
    assert form.context["validlink"]
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a long new pass 42", "new_password2": "a long new pass 42"},
    )
    assert done.status_code == 302 and done["Location"] == reverse("login")
    assert client.login(username="nina@example.com", password="a long new pass 42")
    client.logout()
    assert not client.get(link, follow=True).context["validlink"]  # used: it works once


def test_inviting_an_existing_account_invites_it_and_an_existing_member_is_refused(
    as_admin, org, member, django_capture_on_commit_callbacks
):
    UserFactory(username="omar", email="omar@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        as_admin.post(url("members-invite", org), {"email": "omar@example.com", "role": "member"})
        again = as_admin.post(
            url("members-invite", org), {"email": member.email.upper(), "role": "admin"}, follow=True
        )

    assert "omar" not in roles(org)  # invited (issue 31): a member once they accept
    assert invited(org) == {"omar": "member"}
    assert actions() == ["membership.invitation_sent"]
    assert len(mail.outbox) == 1 and "/invitations/" in mail.outbox[0].body  # no set-password link
    assert "already a member" in again.content.decode()


def test_adding_by_sign_in_identity_finds_only_people_who_signed_in(as_admin, org, other_org, other_admin):
    feishu_user = UserFactory(username="fei", email="fei@example.com")
    link_feishu_identity(feishu_user, open_id="ou_fei", union_id="on_fei")
    UserFactory(username="plain", email="plain@example.com")
    by_hand_elsewhere = member_of(other_org, Role.MEMBER, username="hand", email="hand@example.com")
    identity_link_feishu_by_hand(
        organization=other_org, actor=other_admin, user=by_hand_elsewhere, open_id="ou_hand"
    )

    as_admin.post(url("members-add-identity", org), {"identifier": "ou_fei", "role": "approver"})
    for refused in ("plain@example.com", "ou_hand", "hand@example.com"):
        response = as_admin.post(
            url("members-add-identity", org), {"identifier": refused, "role": "member"}, follow=True
        )
        assert "Nobody who signed in with Feishu or single sign-on" in response.content.decode()

    assert roles(org) == {"ada": "admin"} and invited(org) == {"fei": "approver"}


def test_an_sso_user_is_found_by_e_mail_too(as_admin, org):
    user = UserFactory(username="lin", email="lin@example.com")
    link_feishu_identity(user, open_id="ou_lin")
    as_admin.post(url("members-add-identity", org), {"identifier": "LIN@example.com", "role": "member"})
    assert invited(org) == {"lin": "member"}


def test_roles_change_and_members_are_removed_audited(as_admin, org, member, org_admin):
    mia = Membership.objects.get(organization=org, user=member)
    as_admin.post(url("members-set-role", org, mia), {"role": "approver"})
    assert roles(org)["mia"] == "approver"
    as_admin.post(url("members-remove", org, mia))
    assert "mia" not in roles(org)
    rows = list(AuditLog.objects.order_by("id"))
    assert [(r.action, r.actor, r.organization) for r in rows] == [
        ("membership.updated", org_admin, org),
        ("membership.deleted", org_admin, org),
    ]
    assert rows[0].before == {"user": "mia", "role": "member"}


def test_the_last_owner_can_be_neither_removed_nor_demoted(client, org, org_owner, org_admin):
    owner = Membership.objects.get(organization=org, user=org_owner)
    assert client.login(username=org_owner.username, password=PASSWORD)
    demoted = client.post(url("members-set-role", org, owner), {"role": "admin"}, follow=True)
    removed = client.post(url("members-remove", org, owner), follow=True)
    assert "last owner" in demoted.content.decode() and "last owner" in removed.content.decode()

    assert client.login(username=org_admin.username, password=PASSWORD)
    by_admin = client.post(url("members-remove", org, owner), follow=True)
    assert "Only an owner" in by_admin.content.decode()
    assert roles(org)["oscar"] == "owner" and actions() == []


@pytest.mark.cross_org(
    "members-page",
    "members-invite",
    "members-add-identity",
    "members-set-role",
    "members-remove",
    "members-link-feishu",
    "member-join",
)
def test_another_organisations_members_are_404_and_unchanged(as_admin, org, other_org, other_admin):
    foreign = Membership.objects.get(organization=other_org, user=other_admin)
    for name, data in (
        ("members-set-role", {"role": "member"}),
        ("members-remove", {}),
        ("members-link-feishu", {"open_id": "ou_x"}),
    ):
        assert as_admin.post(url(name, org, foreign), data).status_code == 404
        assert as_admin.post(url(name, other_org, foreign), data).status_code == 404
    assert as_admin.get(page(other_org)).status_code == 404
    assert as_admin.post(url("members-invite", other_org), {"email": "x@example.com"}).status_code == 404
    assert as_admin.post(url("members-add-identity", other_org), {"identifier": "ou_x"}).status_code == 404
    # a set-password link only opens under an organisation its user belongs to
    uid = urlsafe_base64_encode(force_bytes(other_admin.pk))
    join = reverse("member-join", kwargs={"org_slug": org.slug, "uidb64": uid, "token": "x-y"})
    assert as_admin.get(join).status_code == 404
    assert Membership.objects.get(pk=foreign.pk).role == "admin"
    assert actions() == [] and not LinkedIdentity.objects.exists()


def test_an_admin_links_a_members_feishu_account_by_hand(as_admin, org, member, org_admin):
    mia = Membership.objects.get(organization=org, user=member)
    bad = as_admin.post(url("members-link-feishu", org, mia), {"open_id": "not-an-open-id"}, follow=True)
    assert "A Feishu open_id looks like" in bad.content.decode()

    done = as_admin.post(url("members-link-feishu", org, mia), {"open_id": "ou_mia"}, follow=True)

    identity = LinkedIdentity.objects.get()
    assert identity.user == member and identity.organization == org and identity.open_id == "ou_mia"
    assert AuditLog.objects.get(action="linked_identity.created").actor == org_admin
    assert re.search(r'data-username="mia".*?Linked', done.content.decode(), re.S)


def test_a_member_of_two_organisations_is_only_changed_in_the_urls_one(as_admin, org, other_org):
    both = member_of(org, Role.MEMBER, username="both")
    MembershipFactory(organization=other_org, user=both, role=Role.MEMBER)
    here = Membership.objects.get(organization=org, user=both)
    as_admin.post(url("members-set-role", org, here), {"role": "approver"})
    as_admin.post(url("members-remove", org, here))
    assert Membership.objects.get(organization=other_org, user=both).role == "member"
