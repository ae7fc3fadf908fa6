"""Every request of a sign-in goes through the SSRF guard: the configured provider hosts and
SSO_ALLOWED_PRIVATE_HOSTS may be private, anything else (a discovery document naming an internal host
among them) is refused before a byte is sent, and the checked address is the one connected to."""

from __future__ import annotations

import pytest
import requests
from django.contrib.auth import get_user_model

from platform_core.wiring.sso_http import SSRFRefused, guarded_session, sso_allowed_private_hosts
from tests.platform_core.sso.conftest import OIDC_ID
from tests.platform_core.sso.factories import SignInRuleFactory

pytestmark = pytest.mark.django_db


def test_the_configured_provider_hosts_are_the_operators_and_allowed(sso, settings):
    settings.SSO_ALLOWED_PRIVATE_HOSTS = ["idp.internal"]
    assert sso_allowed_private_hosts() == ("127.0.0.1", "idp.internal")


def test_a_token_endpoint_on_a_private_host_the_operator_did_not_allow_is_never_called(client, sso, org):
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example")
    sso.oidc.sign_in_as("grace@acme.example")
    port = sso.oidc.address.rsplit(":", 1)[1]
    sso.oidc.discovery_overrides = {"token_endpoint": f"http://localhost:{port}/token"}

    done = sso.oidc_sign_in(client)

    assert done.status_code == 401  # allauth's authentication error page
    assert "/token" not in [path for _method, path in sso.oidc.requests]
    assert not get_user_model().objects.exists()


def test_a_private_address_is_refused_unless_allowed(settings, fake_dns, fake_oidc):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    settings.SSO_ALLOWED_PRIVATE_HOSTS = []
    fake_dns["idp.corp.example"] = ["10.1.2.3"]

    with pytest.raises(SSRFRefused, match="private"):
        guarded_session().get("http://idp.corp.example/.well-known/openid-configuration")
    with pytest.raises(SSRFRefused, match="loopback"):
        guarded_session().get(f"{fake_oidc.address}/.well-known/openid-configuration")
    assert fake_oidc.requests == []


def test_an_allowed_name_is_connected_to_at_the_checked_address_with_its_own_host_header(
    settings, fake_dns, fake_oidc
):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    settings.SSO_ALLOWED_PRIVATE_HOSTS = ["idp.corp.example"]
    fake_dns["idp.corp.example"] = ["127.0.0.1"]
    port = fake_oidc.address.rsplit(":", 1)[1]

    reply = guarded_session().get(f"http://idp.corp.example:{port}/.well-known/openid-configuration")

    assert reply.status_code == 200
    assert fake_dns["<lookups>"] == ["idp.corp.example"]  # and no second lookup (fake_dns fails one)
    assert reply.request.headers["Host"] == f"idp.corp.example:{port}"


def test_only_http_and_https_urls_are_called(settings):
    settings.SOCIALACCOUNT_PROVIDERS = {}
    with pytest.raises((requests.exceptions.InvalidURL, requests.exceptions.InvalidSchema)):
        guarded_session().get("file:///etc/passwd")
