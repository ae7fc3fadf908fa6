"""Password sign-in per organisation: on by default, off for the members of an organisation that
switched it off, with a message naming how to sign in instead (issue 20)."""

from __future__ import annotations

import pytest

from platform_core.models import Role
from tests.factories import PASSWORD, MembershipFactory, UserFactory, member_of
from tests.platform_core.sso.conftest import OIDC_ID
from tests.platform_core.sso.factories import SignInRuleFactory, SignInSettingsFactory

pytestmark = pytest.mark.django_db


def _post_login(client, username):
    return client.post("/login/", {"username": username, "password": PASSWORD})


def test_password_sign_in_works_by_default(client, member):
    assert _post_login(client, member.username)["Location"] == "/"


def test_a_member_of_an_org_with_password_sign_in_off_is_refused_and_told_the_providers(
    client, sso, org, member
):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key="t1")
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example")
    SignInSettingsFactory(organization=org, password_login=False)

    page = _post_login(client, member.username)

    assert page.status_code == 200
    assert "_auth_user_id" not in client.session
    body = page.content.decode()
    assert 'data-reason="password-login-off"' in body
    assert "Acme does not allow signing in with a password. Sign in with Corp SSO / Feishu instead." in body
    assert 'data-provider="feishu"' in body and f'data-provider="{OIDC_ID}"' in body


def test_a_wrong_password_tells_nothing_about_the_org(client, sso, org, member):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key="t1")
    SignInSettingsFactory(organization=org, password_login=False)

    page = client.post("/login/", {"username": member.username, "password": "wrong"})

    assert "password-login-off" not in page.content.decode()
    assert "match. Please try again." in page.content.decode()


def test_the_admin_login_refuses_the_password_too(client, org, org_admin):
    SignInRuleFactory(organization=org)
    SignInSettingsFactory(organization=org, password_login=False)

    page = client.post(
        "/admin/login/", {"username": org_admin.username, "password": PASSWORD, "next": "/admin/"}
    )

    assert "_auth_user_id" not in client.session
    assert "does not allow signing in with a password" in page.content.decode()


def test_members_of_other_orgs_and_superusers_keep_their_passwords(client, org, other_org):
    SignInSettingsFactory(organization=org, password_login=False)
    outsider = member_of(other_org, Role.MEMBER, username="olga")
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    MembershipFactory(organization=org, user=root, role=Role.OWNER)

    assert client.login(username=outsider.username, password=PASSWORD)
    client.logout()
    assert client.login(username=root.username, password=PASSWORD)


def test_a_member_refused_a_password_signs_in_with_feishu(client, sso, org, member):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key="t1")
    SignInSettingsFactory(organization=org, password_login=False)
    sso.feishu.sign_in_as("Mia", tenant_key="t1", enterprise_email=member.email)

    sso.feishu_sign_in(client)

    assert client.session["_auth_user_id"] == str(member.pk)


def test_the_sign_in_page_lets_its_forms_redirect_to_the_providers_and_nowhere_else(client, sso):
    page = client.get("/login/")

    policy = page["Content-Security-Policy"]
    form_action = next(d for d in policy.split(";") if d.strip().startswith("form-action")).split()[1:]
    assert sorted(form_action) == sorted(["'self'", sso.feishu.base_url, sso.oidc.address])
    assert "script-src 'self'" in policy


def test_without_providers_the_sign_in_page_has_no_buttons_and_the_strict_policy(client, settings):
    settings.SOCIALACCOUNT_PROVIDERS = {}

    page = client.get("/login/")

    assert b"data-provider" not in page.content
    assert "form-action 'self';" in page["Content-Security-Policy"] + ";"
