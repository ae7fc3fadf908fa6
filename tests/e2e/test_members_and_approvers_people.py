"""Approvers as people and the Members page in Debian's chromium: an owner chooses a policy's approvers
by name in the admin (filtering the list by a person's name, marked when their Feishu account is linked)
and picks a role; on the Members page they invite by e-mail (the set-password link is shown once), add
someone who signed in with Feishu, change a role and remove a member."""

from __future__ import annotations

import json

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer

pytestmark = pytest.mark.e2e

ORG = "initech"
OWNER, LEE, MIA, FEI = "ini-olga", "ini-lee", "ini-mia", "ini-fei"
CONNECTOR = "Initech ERP"


def build_people_world() -> dict[str, object]:
    """An organisation of its own: an owner, an approver with a linked Feishu account, a member, a
    connector, and a user outside it who signed in with Feishu (run in a subprocess)."""
    from platform_core.identity.linked_identities import link_feishu_identity
    from platform_core.models import Role
    from tests.factories import ConnectorFactory, OrganizationFactory, UserFactory, member_of

    org = OrganizationFactory(slug=ORG, name="Initech")
    member_of(org, Role.OWNER, username=OWNER)
    lee = member_of(org, Role.APPROVER, username=LEE, first_name="Lee", last_name="Chen")
    link_feishu_identity(lee, open_id="ou_ini_lee")
    member_of(org, Role.MEMBER, username=MIA, first_name="Mia", last_name="Wong")
    fei = UserFactory(username=FEI, email="fei@initech.example")
    link_feishu_identity(fei, open_id="ou_ini_fei")
    ConnectorFactory(organization=org, name=CONNECTOR)
    return {"org": ORG}


@pytest.fixture(scope="module")
def people_world(e2e_server: E2EServer) -> dict[str, object]:
    return e2e_server.build("tests.e2e.test_members_and_approvers_people:build_people_world")


@pytest.fixture
def open_as(signed_in_page):
    """``open_as(username, path)``: a new context signed in, on ``path``."""

    def make(username: str, path: str):
        page, _errors = signed_in_page(username, next=path, width=1280, height=860)
        return page

    return make


def test_an_owner_chooses_a_policys_approvers_by_name_in_the_admin(open_as, people_world, e2e_server):
    page = open_as(OWNER, "/admin/hooks/approvalpolicy/add/")
    page.fill("#id_name", "Large payments")
    page.select_option("#id_connectors_from", label=CONNECTOR)
    page.click("#id_connectors_add")

    page.fill("#id_approver_users_input", "Lee")  # the chooser filters people by name
    lee = page.locator("#id_approver_users_from option", has_text="Lee Chen")
    expect(lee).to_have_text(f"Lee Chen ({LEE}) · Feishu linked")
    page.select_option("#id_approver_users_from", label=f"Lee Chen ({LEE}) · Feishu linked")
    page.click("#id_approver_users_add")
    page.get_by_label("Admin", exact=True).check()
    expect(page.get_by_text("People without a platform account (Feishu open_id)")).to_be_visible()
    page.fill("#id_approver_open_ids_text", "ou_boss")
    page.click("input[name=_continue]")

    expect(page.locator(".who-is-asked")).to_contain_text("Lee Chen")
    expect(page.locator(".who-is-asked")).to_contain_text("holding the role Admin")
    rows = e2e_server.query(
        "SELECT u.username, p.approver_roles, p.approver_open_ids FROM hooks_approvalpolicy p "
        "JOIN hooks_approvalpolicy_approver_users a ON a.approvalpolicy_id = p.id "
        "JOIN auth_user u ON u.id = a.user_id WHERE p.name = 'Large payments'"
    )
    assert [(r[0], json.loads(r[1]), json.loads(r[2])) for r in rows] == [(LEE, ["admin"], ["ou_boss"])]


def test_the_members_page_invites_changes_a_role_and_removes(open_as, people_world, e2e_server):
    path = f"/o/{ORG}/members/"
    page = open_as(OWNER, path)
    expect(page.locator("nav.topnav a[aria-current=page]")).to_have_text("Members")

    page.fill("#id_email", "newcomer@initech.example")
    page.select_option("#id_role", "approver")
    page.locator(f"form[action='/o/{ORG}/members/invite/']").get_by_role("button", name="Invite").click()
    link = page.locator("#set-password-link")
    expect(link).to_be_visible()
    assert link.input_value().startswith(f"{e2e_server.url}/o/{ORG}/members/join/")

    page.goto(f"{e2e_server.url}{path}")
    expect(page.locator("#set-password-link")).to_have_count(0)  # shown once
    page.fill("#id_identifier", "ou_ini_fei")
    page.locator(f"form[action='/o/{ORG}/members/add/']").get_by_role("button", name="Invite").click()
    expect(page.locator(".messages")).to_contain_text(
        f"{FEI} was invited: they become a member when they accept."
    )
    expect(page.locator(f'tr[data-invitation="{FEI}"]')).to_be_visible()  # an existing account: issue 31
    expect(page.locator(f'tr[data-username="{FEI}"]')).to_have_count(0)

    row = page.locator(f'tr[data-username="{MIA}"]')
    row.get_by_label(f"Role of {MIA}").select_option("approver")
    row.get_by_role("button", name="Change role").click()
    expect(page.locator(".messages")).to_contain_text(f"{MIA}'s role was changed.")
    expect(page.locator(f'tr[data-username="{MIA}"] select')).to_have_value("approver")

    page.locator(f'tr[data-username="{MIA}"]').get_by_role("button", name=f"Remove {MIA}").click()
    expect(page.locator(".messages")).to_contain_text(f"{MIA} was removed from the organisation.")
    expect(page.locator(f'tr[data-username="{MIA}"]')).to_have_count(0)

    audited = e2e_server.query(
        "SELECT a.action FROM platform_core_auditlog a JOIN platform_core_organization o "
        "ON o.id = a.organization_id WHERE o.slug = ? AND a.action LIKE 'membership.%' ORDER BY a.id",
        (ORG,),
    )
    assert [r[0] for r in audited][-5:] == [
        "membership.created",
        "membership.invited",
        "membership.invitation_sent",
        "membership.updated",
        "membership.deleted",
    ]
