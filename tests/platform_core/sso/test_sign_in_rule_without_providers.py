"""A sign-in rule where the deployment has no sign-in provider yet, and the rule's database constraints
(issue 32): the admin says which environment variables the operator sets, and every constraint a form or
the API can hit is a translated error on a field, never the constraint's raw name."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client, override_settings
from django.utils import translation

from platform_core.models import Role, SignInRule
from tests.platform_core.sso.conftest import OIDC_ID
from tests.platform_core.sso.factories import SignInRuleFactory

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/platform_core/signinrule/add/"
NO_PROVIDERS = override_settings(SOCIALACCOUNT_PROVIDERS={})


@pytest.fixture
def admin_browser(org_admin) -> Client:
    client = Client()
    client.force_login(org_admin)
    return client


@NO_PROVIDERS
def test_the_add_form_without_providers_says_which_variables_the_operator_sets(admin_browser):
    page = admin_browser.get(ADD_URL).content.decode()

    assert "No sign-in provider is configured" in page
    for variable in ("FEISHU_SSO_APP_ID", "FEISHU_SSO_APP_SECRET", "OIDC_PROVIDERS"):
        assert variable in page
    assert ">Provider:</label>" in page or ">Provider</label>" in page


@NO_PROVIDERS
def test_saving_a_rule_without_providers_is_refused_on_the_provider_field(admin_browser, org):
    reply = admin_browser.post(
        ADD_URL, {"organization": org.pk, "provider": "", "email_domain": "", "role": Role.MEMBER}
    )

    assert reply.status_code == 200
    page = reply.content.decode()
    assert "sign_in_rule_one_match" not in page
    assert "is violated" not in page
    errors = reply.context["adminform"].form.errors
    assert "No sign-in provider is configured" in " ".join(errors["provider"])
    assert "__all__" not in errors
    assert not SignInRule.objects.unscoped().exists()


@NO_PROVIDERS
def test_the_add_form_without_providers_is_translated(admin_browser):
    page = admin_browser.get(ADD_URL, headers={"accept-language": "zh-hans"}).content.decode()

    assert "未配置登录方式" in page
    assert "OIDC_PROVIDERS" in page


def test_a_rule_matching_nothing_is_a_field_error_not_the_constraint_name(org):
    rule = SignInRule(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="")

    with translation.override("en"), pytest.raises(ValidationError) as caught:
        rule.validate_constraints()

    assert set(caught.value.message_dict) == {"email_domain"}
    assert "sign_in_rule_one_match" not in str(caught.value)


def test_a_feishu_rule_with_both_matches_is_a_field_error_on_the_tenant_key(org):
    rule = SignInRule(organization=org, provider="feishu", feishu_tenant_key="t", email_domain="a.example")

    with pytest.raises(ValidationError) as caught:
        rule.validate_constraints()

    assert set(caught.value.message_dict) == {"feishu_tenant_key"}


def test_a_duplicate_rule_is_a_field_error_on_what_it_matches(org):
    SignInRuleFactory(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="a.example")
    rule = SignInRule(organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="a.example")

    with translation.override("en"), pytest.raises(ValidationError) as caught:
        rule.validate_constraints()

    assert set(caught.value.message_dict) == {"email_domain"}
    assert "unique_sign_in_rule" not in str(caught.value)
    assert "already has a sign-in rule" in str(caught.value)


@NO_PROVIDERS
def test_the_api_without_providers_refuses_a_rule_with_a_clear_message(org_admin):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(org_admin)
    reply = client.post(
        "/api/v1/orgs/acme/sign-in-rules/",
        {"provider": "corp", "email_domain": "a.example", "role": "member"},
        format="json",
        headers={"accept-language": "en"},
    )

    assert reply.status_code == 400
    message = " ".join(reply.json()["provider"])
    assert "No sign-in provider is configured" in message
    assert "OIDC_PROVIDERS" in message
    assert not SignInRule.objects.unscoped().exists()
