"""Browser test: sign in with Feishu through the fake Feishu (issue 20).

A daphne server of its own, configured with the fake as its Feishu origin (FEISHU_SSO_*), and an
organisation whose sign-in rule admits the fake's tenant as approvers. Chromium presses "Sign in with
Feishu" under the strict Content-Security-Policy, the fake consents and redirects back, and the new
user lands signed in, an approver of the organisation, with the Feishu identity linked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from tests.e2e.browser_pages import EXPECT_TIMEOUT_MS, expect
from tests.e2e.conftest import E2EServer, free_port, run_checked, server_env
from tests.fakes.feishu_server import FAKE_APP_ID, FAKE_APP_SECRET, FakeFeishu

pytestmark = pytest.mark.e2e

TENANT = "tenant-e2e"
SETUP = (
    "import django;django.setup();"
    "from django.utils import timezone;"
    "from platform_core.models import Role, SignInRule;"
    "from platform_core.services import organization_create;"
    "org=organization_create(slug='acme', name='Acme Trading');"
    # approved by the operator: an unapproved claim routes no sign-in (issue 31)
    "SignInRule.objects.create(organization=org, provider='feishu', "
    f"feishu_tenant_key='{TENANT}', role=Role.APPROVER, approved_at=timezone.now())"
)


@pytest.fixture(scope="module")
def sso_server(chromium_path, tmp_path_factory, fake_feishu_server: FakeFeishu) -> Iterator[E2EServer]:
    folder = tmp_path_factory.mktemp("e2e-sso")
    database = folder / "e2e.sqlite3"
    env = server_env(
        database,
        {
            "FEISHU_SSO_APP_ID": FAKE_APP_ID,
            "FEISHU_SSO_APP_SECRET": FAKE_APP_SECRET,
            "FEISHU_SSO_BASE_URL": fake_feishu_server.base_url,
        },
    )
    server = E2EServer(port=free_port(), database=database, log_path=folder / "daphne.log", env=env)
    run_checked([sys.executable, "manage.py", "migrate", "--noinput"], env, "migrate")
    run_checked([sys.executable, "-c", SETUP], env, "sign-in rule setup")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_new_user_signs_in_with_feishu_through_the_fake_and_joins_as_an_approver(
    browser, sso_server, fake_feishu
):
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    person = fake_feishu.sign_in_as("Han Meimei", tenant_key=TENANT, enterprise_email="han@acme.example")
    context = browser.new_context(locale="en-GB")
    violations: list[str] = []
    page = context.new_page()
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        page.goto(f"{sso_server.url}/login/")
        button = page.locator("button.sso[data-provider=feishu]")
        expect(button).to_have_text("Sign in with Feishu")
        button.click()
        page.wait_for_url(f"{sso_server.url}/**")
        expect(page.locator(".topbar")).to_contain_text("han")
        assert violations == []
    finally:
        context.close()
    rows = sso_server.query(
        "select u.username, m.role, o.slug from platform_core_membership m "
        "join auth_user u on u.id = m.user_id join platform_core_organization o on o.id = m.organization_id"
    )
    assert rows == [("han", "approver", "acme")]
    linked = sso_server.query("select open_id, tenant_key from platform_core_linkedidentity")
    assert linked == [(person.open_id, TENANT)]


def test_a_user_of_another_tenant_is_sent_back_to_the_sign_in_page_with_the_reason(
    browser, sso_server, fake_feishu
):
    expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    fake_feishu.sign_in_as("Stranger", tenant_key="tenant-elsewhere")
    context = browser.new_context(locale="en-GB")
    page = context.new_page()
    try:
        page.goto(f"{sso_server.url}/login/")
        page.click("button.sso[data-provider=feishu]")
        page.wait_for_url(f"{sso_server.url}/login/")
        expect(page.locator(".messages")).to_contain_text("tenant-elsewhere")
    finally:
        context.close()
