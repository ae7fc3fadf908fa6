"""Issue 31: adding an existing account to an organisation is an invitation the person accepts while
signed in, on every path (API, Members page, admin). Until they accept, the organisation is not theirs:
its password switch cannot reach their sign-in, and another organisation's admin cannot lock them out."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core import mail
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from platform_core.models import AuditLog, Membership, MembershipInvitation, Role
from tests.factories import PASSWORD, MembershipFactory, OrganizationFactory, UserFactory
from tests.platform_core.sso.factories import SignInRuleFactory, SignInSettingsFactory

pytestmark = pytest.mark.django_db


def members_url(org) -> str:
    return f"/api/v1/orgs/{org.slug}/members/"


def invitations_url(org, invitation=None) -> str:
    url = f"/api/v1/orgs/{org.slug}/member-invitations/"
    return f"{url}{invitation.pk}/" if invitation is not None else url


def _password_sign_in(client, user):
    return client.post("/login/", {"username": user.username, "password": PASSWORD})


def _is_member(org, user) -> bool:
    return Membership.objects.filter(organization=org, user=user).exists()


# --- the finding: another organisation's admin cannot lock a person out --------------------------------


def test_an_admin_of_another_org_cannot_lock_out_an_account_by_adding_it_and_switching_passwords_off(
    client_for, client, org, org_admin, other_org, other_admin
):
    # given: Acme's admin names Globex's admin by exact username
    api = client_for(org_admin)
    added = api.post(members_url(org), {"user": other_admin.username, "role": "member"}, format="json")

    # then: an invitation, not a membership
    assert added.status_code == 202, added.content
    assert added.json()["username"] == other_admin.username and added.json()["status"] == "invited"
    assert not _is_member(org, other_admin)

    # when: Acme adds a sign-in rule and switches passwords off
    SignInRuleFactory(organization=org, feishu_tenant_key="acme-tenant")
    off = api.put(f"/api/v1/orgs/{org.slug}/sign-in-settings/", {"password_login": False}, format="json")
    assert off.status_code == 200, off.content

    # then: Globex's admin still signs in with the password
    signed_in = _password_sign_in(client, other_admin)
    assert signed_in.status_code == 302, signed_in.content.decode()[-800:]
    assert client.session["_auth_user_id"] == str(other_admin.pk)


def test_an_accepted_invitation_makes_the_person_a_member_under_the_orgs_sign_in_policy(
    client_for, client, org, org_admin, other_admin
):
    client_for(org_admin).post(members_url(org), {"user": other_admin.username}, format="json")
    invitation = MembershipInvitation.objects.unscoped().get(organization=org, user=other_admin)
    SignInRuleFactory(organization=org, feishu_tenant_key="acme-tenant")
    SignInSettingsFactory(organization=org, password_login=False)
    client.force_login(other_admin)

    page = client.get(reverse("invitations"))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Acme" in body and "does not allow signing in with a password" in body  # told before accepting
    accepted = client.post(reverse("invitation-accept", args=[invitation.pk]))

    assert accepted.status_code == 302
    assert Membership.objects.get(organization=org, user=other_admin).role == Role.MEMBER
    assert not MembershipInvitation.objects.unscoped().exists()
    rows = list(AuditLog.objects.filter(organization=org, action__startswith="membership.").order_by("id"))
    assert [(r.action, r.actor) for r in rows] == [
        ("membership.invitation_sent", org_admin),
        ("membership.created", other_admin),
        ("membership.invitation_accepted", other_admin),
    ]
    client.logout()
    assert "_auth_user_id" not in client.session
    _password_sign_in(client, other_admin)
    assert "_auth_user_id" not in client.session  # the policy they accepted


def test_a_declined_invitation_leaves_no_membership_and_is_audited(client_for, client, org, org_admin):
    nina = UserFactory(username="nina")
    client_for(org_admin).post(members_url(org), {"user": "nina", "role": "approver"}, format="json")
    invitation = MembershipInvitation.objects.unscoped().get(user=nina)
    client.force_login(nina)

    assert client.post(reverse("invitation-decline", args=[invitation.pk])).status_code == 302

    assert not _is_member(org, nina) and not MembershipInvitation.objects.unscoped().exists()
    assert AuditLog.objects.filter(organization=org, action="membership.invitation_declined").count() == 1


def test_nobody_else_can_accept_or_see_someones_invitation(client_for, client, org, org_admin):
    nina = UserFactory(username="nina")
    client_for(org_admin).post(members_url(org), {"user": "nina"}, format="json")
    invitation = MembershipInvitation.objects.unscoped().get(user=nina)
    client.force_login(UserFactory(username="mallory"))

    assert "Acme" not in client.get(reverse("invitations")).content.decode()
    assert client.post(reverse("invitation-accept", args=[invitation.pk])).status_code == 404
    assert client.post(reverse("invitation-decline", args=[invitation.pk])).status_code == 404
    assert not Membership.objects.filter(organization=org, user__username__in=["nina", "mallory"]).exists()
    assert MembershipInvitation.objects.unscoped().filter(pk=invitation.pk).exists()


def test_an_expired_invitation_cannot_be_accepted(client_for, client, org, org_admin):
    nina = UserFactory(username="nina")
    client_for(org_admin).post(members_url(org), {"user": "nina"}, format="json")
    MembershipInvitation.objects.unscoped().update(expires_at=timezone.now() - timedelta(seconds=1))
    invitation = MembershipInvitation.objects.unscoped().get(user=nina)
    client.force_login(nina)

    client.post(reverse("invitation-accept", args=[invitation.pk]))

    assert not _is_member(org, nina)


def test_an_owner_invitation_needs_an_owner_and_is_rechecked_on_acceptance(
    client_for, client, org, org_admin, org_owner
):
    nina = UserFactory(username="nina")
    refused = client_for(org_admin).post(members_url(org), {"user": "nina", "role": "owner"}, format="json")
    assert refused.status_code == 403 and not MembershipInvitation.objects.unscoped().exists()

    client_for(org_owner).post(members_url(org), {"user": "nina", "role": "owner"}, format="json")
    invitation = MembershipInvitation.objects.unscoped().get(user=nina)
    Membership.objects.filter(user=org_owner).update(role=Role.ADMIN)  # the inviter is no owner any more
    MembershipFactory(organization=org, role=Role.OWNER)
    client.force_login(nina)
    client.post(reverse("invitation-accept", args=[invitation.pk]))

    assert not _is_member(org, nina)


# --- the API: invitations are listed and cancelled; another org's are hidden ---------------------------


def test_existing_members_and_pending_invitations_are_refused_a_second_time(
    client_for, org, org_admin, member
):
    api = client_for(org_admin)
    assert api.post(members_url(org), {"user": member.username}, format="json").status_code == 400
    UserFactory(username="nina")
    assert api.post(members_url(org), {"user": "nina"}, format="json").status_code == 202
    again = api.post(members_url(org), {"user": "nina", "role": "approver"}, format="json")
    assert again.status_code == 202  # re-sent with the new role
    assert MembershipInvitation.objects.unscoped().get(user__username="nina").role == Role.APPROVER


def test_admins_list_and_cancel_their_pending_invitations(client_for, org, org_admin):
    api = client_for(org_admin)
    UserFactory(username="nina")
    api.post(members_url(org), {"user": "nina"}, format="json")
    invitation = MembershipInvitation.objects.unscoped().get()

    listed = api.get(invitations_url(org)).json()["results"]
    assert [(i["username"], i["role"], i["invited_by"]) for i in listed] == [("nina", "member", "ada")]
    assert api.delete(invitations_url(org, invitation)).status_code == 204
    assert not MembershipInvitation.objects.unscoped().exists()
    assert AuditLog.objects.filter(organization=org, action="membership.invitation_cancelled").exists()


@pytest.mark.cross_org("member-invitation-list", "member-invitation-detail")
def test_another_organisations_invitations_are_hidden_and_untouchable(client_for, org, org_admin, other_org):
    foreign = MembershipInvitation.objects.create(
        organization=other_org,
        user=UserFactory(username="globex-invitee"),
        role=Role.MEMBER,
        expires_at=timezone.now() + timedelta(days=1),
    )
    api = client_for(org_admin)

    assert api.get(invitations_url(org)).json()["results"] == []
    assert api.get(invitations_url(org, foreign)).status_code == 404
    assert api.delete(invitations_url(org, foreign)).status_code == 404
    assert api.get(invitations_url(other_org)).status_code == 404
    assert MembershipInvitation.objects.unscoped().filter(pk=foreign.pk).exists()


def test_members_and_approvers_cannot_invite(client_for, org, member):
    UserFactory(username="nina")
    assert client_for(member).post(members_url(org), {"user": "nina"}, format="json").status_code == 403
    assert client_for(member).get(invitations_url(org)).status_code == 403
    assert not MembershipInvitation.objects.unscoped().exists()


# --- the Members page -----------------------------------------------------------------------------------


@pytest.fixture
def as_admin(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_the_members_page_invites_an_existing_address_and_tells_them_by_mail(
    as_admin, org, other_admin, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        done = as_admin.post(
            reverse("members-invite", kwargs={"org_slug": org.slug}),
            {"email": other_admin.email.upper(), "role": "admin"},
            follow=True,
        )

    assert not _is_member(org, other_admin)
    assert MembershipInvitation.objects.unscoped().get(organization=org, user=other_admin).role == Role.ADMIN
    assert "invited" in done.content.decode()
    assert [m.to for m in mail.outbox] == [[other_admin.email]]
    assert "/invitations/" in mail.outbox[0].body
    page = as_admin.get(reverse("members-page", kwargs={"org_slug": org.slug}))
    assert other_admin.username in {i.user.username for i in page.context["invitations"]}


def test_the_members_page_invites_a_sign_in_identity_instead_of_adding_it(as_admin, org):
    from platform_core.identity.linked_identities import link_feishu_identity

    fei = UserFactory(username="fei")
    link_feishu_identity(fei, open_id="ou_fei")

    as_admin.post(
        reverse("members-add-identity", kwargs={"org_slug": org.slug}),
        {"identifier": "ou_fei", "role": "member"},
    )

    assert not _is_member(org, fei)
    assert MembershipInvitation.objects.unscoped().filter(organization=org, user=fei).exists()


@pytest.mark.cross_org("members-cancel-invitation", "members-page")
def test_the_members_page_cancels_only_its_own_organisations_invitations(as_admin, org, other_org, org_admin):
    ours = MembershipInvitation.objects.create(
        organization=org, user=UserFactory(), role=Role.MEMBER, expires_at=timezone.now() + timedelta(days=1)
    )
    theirs = MembershipInvitation.objects.create(
        organization=other_org,
        user=UserFactory(),
        role=Role.MEMBER,
        expires_at=timezone.now() + timedelta(days=1),
    )
    cancel = "members-cancel-invitation"

    foreign = as_admin.post(reverse(cancel, kwargs={"org_slug": org.slug, "invitation_id": theirs.pk}))
    other_slug = as_admin.post(
        reverse(cancel, kwargs={"org_slug": other_org.slug, "invitation_id": theirs.pk})
    )
    assert foreign.status_code == 404 and other_slug.status_code == 404
    assert MembershipInvitation.objects.unscoped().filter(pk=theirs.pk).exists()
    listed = as_admin.get(reverse("members-page", kwargs={"org_slug": org.slug})).context["invitations"]
    assert [i.pk for i in listed] == [ours.pk]
    assert (
        as_admin.post(reverse(cancel, kwargs={"org_slug": org.slug, "invitation_id": ours.pk})).status_code
        == 302
    )
    assert not MembershipInvitation.objects.unscoped().filter(pk=ours.pk).exists()


# --- the admin ------------------------------------------------------------------------------------------


def test_the_admin_invites_an_existing_user_instead_of_adding_them(client, org, org_admin, other_admin):
    client.force_login(org_admin)

    assert client.get(reverse("admin:platform_core_membership_add")).status_code == 403
    done = client.post(
        reverse("admin:platform_core_membershipinvitation_add"),
        {"user": other_admin.username, "organization": org.pk, "role": Role.ADMIN},
    )

    assert done.status_code == 302, done.content.decode()[-2000:]
    assert not _is_member(org, other_admin)
    invitation = MembershipInvitation.objects.unscoped().get(organization=org, user=other_admin)
    assert (invitation.role, invitation.invited_by) == (Role.ADMIN, org_admin)
    assert AuditLog.objects.filter(organization=org, action="membership.invitation_sent").count() == 1


def test_a_superuser_in_the_admin_invites_too(client, org, other_admin):
    client.force_login(UserFactory(username="root", is_superuser=True, is_staff=True))

    client.post(
        reverse("admin:platform_core_membershipinvitation_add"),
        {"user": other_admin.pk, "organization": org.pk, "role": Role.MEMBER},
    )

    assert not _is_member(org, other_admin)
    assert MembershipInvitation.objects.unscoped().filter(organization=org, user=other_admin).exists()


def test_the_admin_lists_only_its_organisations_invitations(client, org, other_org, org_admin):
    MembershipInvitation.objects.create(
        organization=org,
        user=UserFactory(username="ours-nina"),
        role=Role.MEMBER,
        expires_at=timezone.now() + timedelta(days=1),
    )
    theirs = MembershipInvitation.objects.create(
        organization=other_org,
        user=UserFactory(username="theirs-tom"),
        role=Role.MEMBER,
        expires_at=timezone.now() + timedelta(days=1),
    )
    client.force_login(org_admin)

    body = client.get(reverse("admin:platform_core_membershipinvitation_changelist")).content.decode()
    assert "ours-nina" in body and "theirs-tom" not in body
    client.post(reverse("admin:platform_core_membershipinvitation_delete", args=[theirs.pk]), {"post": "yes"})
    assert MembershipInvitation.objects.unscoped().filter(pk=theirs.pk).exists()


def test_the_operator_command_still_adds_directly(org):
    from django.core.management import call_command

    nina = UserFactory(username="nina")
    call_command("add_member", org.slug, "nina", "--role", "member")
    assert _is_member(org, nina)


def test_inviting_a_new_address_still_creates_the_account_as_a_member(as_admin, org):
    """The new-account flow is unchanged: the account is the organisation's own, made for it."""
    as_admin.post(
        reverse("members-invite", kwargs={"org_slug": org.slug}),
        {"email": "new@example.com", "role": "member"},
    )
    assert Membership.objects.filter(organization=org, user__email="new@example.com").exists()


# --- lists cost the same number of queries however many invitations they show ----------------------------


def _invite(org, n: int, prefix: str) -> None:
    for i in range(n):
        MembershipInvitation.objects.create(
            organization=org,
            user=UserFactory(username=f"{prefix}{i}"),
            role=Role.MEMBER,
            invited_by=UserFactory(username=f"{prefix}-by-{i}"),
            expires_at=timezone.now() + timedelta(days=1),
        )


def _queries(fetch) -> int:
    fetch()  # warm: a first request may read what later ones find cached (the session, the key's address)
    with CaptureQueriesContext(connection) as captured:
        fetch()
    return len(captured)


def test_the_invitation_lists_do_not_grow_queries_with_their_rows(
    client_for, client, org, org_admin, other_org
):
    api = client_for(org_admin)
    client.force_login(org_admin)
    page = reverse("members-page", kwargs={"org_slug": org.slug})
    _invite(org, 1, "one")
    few_api = _queries(lambda: api.get(invitations_url(org)))
    few_page = _queries(lambda: client.get(page))
    _invite(org, 5, "more")
    assert _queries(lambda: api.get(invitations_url(org))) == few_api
    assert _queries(lambda: client.get(page)) == few_page

    invitee = UserFactory(username="popular")
    for slug in ("o1", "o2"):
        MembershipInvitation.objects.create(
            organization=OrganizationFactory(slug=slug),
            user=invitee,
            role=Role.MEMBER,
            expires_at=timezone.now() + timedelta(days=1),
        )
    client.force_login(invitee)
    two = _queries(lambda: client.get(reverse("invitations")))
    MembershipInvitation.objects.create(
        organization=other_org, user=invitee, role=Role.MEMBER, expires_at=timezone.now() + timedelta(days=1)
    )
    assert _queries(lambda: client.get(reverse("invitations"))) == two


def test_the_home_page_points_the_person_to_their_invitations(client_for, client, org, org_admin):
    nina = UserFactory(username="nina")
    client.force_login(nina)
    assert reverse("invitations") not in client.get(reverse("home")).content.decode()

    client_for(org_admin).post(members_url(org), {"user": "nina"}, format="json")

    assert f'href="{reverse("invitations")}"' in client.get(reverse("home")).content.decode()
