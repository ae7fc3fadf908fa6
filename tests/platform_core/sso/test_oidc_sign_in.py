"""OpenID Connect sign-in end to end against a loopback provider (discovery, PKCE, signed id_token)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages

from platform_core.models import Membership, Role
from tests.factories import member_of
from tests.platform_core.sso.conftest import OIDC_ID
from tests.platform_core.sso.factories import SignInRuleFactory

pytestmark = pytest.mark.django_db


def _signed_in_user(client):
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


def test_a_new_user_with_a_verified_address_of_an_admitted_domain_joins_with_the_rules_role(client, sso, org):
    SignInRuleFactory(
        organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example", role=Role.ADMIN
    )
    sso.oidc.sign_in_as("grace@ACME.example", name="Grace")

    done = sso.oidc_sign_in(client)

    assert done.status_code == 302 and done["Location"] == "/"
    user = _signed_in_user(client)
    assert user.email.lower() == "grace@acme.example"
    assert Membership.objects.get(user=user).organization == org
    assert Membership.objects.get(user=user).role == Role.ADMIN
    paths = [p for _m, p in sso.oidc.requests]
    assert paths[0] == "/.well-known/openid-configuration"
    assert {"/authorize", "/token", "/userinfo"} <= set(paths)


def test_an_id_token_of_another_issuer_fails_the_sign_in(client, sso, org):
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example")
    sso.oidc.sign_in_as("grace@acme.example")
    sso.oidc.discovery_overrides = {"issuer": "https://someone-else.example"}

    done = sso.oidc_sign_in(client)

    assert done.status_code == 401
    assert "Sign-in failed" in done.content.decode()
    assert not get_user_model().objects.exists()


def test_a_user_of_another_domain_is_refused_and_told_why(client, sso, org):
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example")
    sso.oidc.sign_in_as("eve@evil.example")

    done = sso.oidc_sign_in(client)

    assert done["Location"] == "/login/"
    assert "_auth_user_id" not in client.session
    assert not get_user_model().objects.exists()
    [message] = [str(m) for m in get_messages(done.wsgi_request)]
    assert "evil.example" in message and "Corp SSO" in message


def test_an_unverified_address_of_an_admitted_domain_is_refused(client, sso, org):
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example")
    sso.oidc.sign_in_as("mallory@acme.example", verified=False)

    done = sso.oidc_sign_in(client)

    assert done["Location"] == "/login/"
    assert not get_user_model().objects.exists()


def test_a_feishu_rule_does_not_admit_an_oidc_user_of_any_domain(client, sso, org):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key="t1")
    sso.oidc.sign_in_as("grace@acme.example")

    assert sso.oidc_sign_in(client)["Location"] == "/login/"


def test_an_existing_member_with_the_verified_address_signs_in_as_themselves(client, sso, org):
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example")
    local = member_of(org, Role.MEMBER, username="grace", email="grace@acme.example")
    sso.oidc.sign_in_as("grace@acme.example")

    sso.oidc_sign_in(client)

    assert _signed_in_user(client) == local
    assert get_user_model().objects.count() == 1
