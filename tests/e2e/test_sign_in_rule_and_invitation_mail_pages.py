"""Two first-day dead ends of issue 32 in Debian's chromium, on the embedded defaults (no sign-in provider,
no mail server): the admin's sign-in rule form says which variables the operator sets and refuses with
that message (never a constraint's name), and inviting a new member says the e-mail was written into the
mail folder (not sent) and shows the link to pass on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.conftest import E2EServer

pytestmark = pytest.mark.e2e

ORG, OWNER = "hooli", "hooli-olga"  # a world of its own: other modules share the server's database


def build_world() -> dict[str, str]:
    """An organisation of its own with an owner (run in a subprocess against the server's database)."""
    from platform_core.models import Role
    from tests.factories import OrganizationFactory, member_of

    org = OrganizationFactory(slug=ORG, name="Umbrella")
    member_of(org, Role.OWNER, username=OWNER)
    return {"org": ORG}


@pytest.fixture(scope="module")
def world(e2e_server: E2EServer) -> None:
    e2e_server.build("tests.e2e.test_sign_in_rule_and_invitation_mail_pages:build_world")


@pytest.fixture
def owner_page(signed_in_page, world):
    """``owner_page(path)``: the owner's page, signed in and landed on ``path``."""
    return lambda path: signed_in_page(OWNER, next=path, width=1280, height=860)[0]


def test_the_sign_in_rule_form_without_providers_explains_and_refuses_clearly(owner_page, e2e_server):
    page = owner_page("/admin/platform_core/signinrule/add/")
    provider_row = page.locator(".field-provider")
    expect(provider_row.locator("label")).to_have_text("Provider:")
    expect(provider_row).to_contain_text("No sign-in provider is configured")
    expect(provider_row).to_contain_text("FEISHU_SSO_APP_ID")
    expect(provider_row).to_contain_text("OIDC_PROVIDERS")

    page.click("input[name=_save]")

    expect(page.locator(".field-provider .errorlist")).to_contain_text(
        "No sign-in provider is configured for this deployment"
    )
    expect(page.locator("body")).not_to_contain_text("sign_in_rule_one_match")
    expect(page.locator(".errornote")).to_be_visible()
    assert e2e_server.query("SELECT count(*) FROM platform_core_signinrule") == [(0,)]


def test_inviting_a_new_member_says_the_mail_was_written_to_the_folder_not_sent(owner_page, e2e_server):
    page = owner_page(f"/o/{ORG}/members/")
    page.fill("#id_email", "alice@hooli.example")
    page.locator(f"form[action='/o/{ORG}/members/invite/']").get_by_role("button", name="Invite").click()

    folder = e2e_server.env["EMAIL_FILE_PATH"]
    invited = page.locator(".invited")
    expect(invited).to_contain_text(f"it was written into the folder {folder}")
    expect(invited).not_to_contain_text("sent by e-mail")
    link = page.locator("#set-password-link").input_value()
    assert link.startswith(f"{e2e_server.url}/o/{ORG}/members/join/")
    written = "".join(p.read_text() for p in Path(folder).iterdir()).replace("=\n", "")
    assert link in written
