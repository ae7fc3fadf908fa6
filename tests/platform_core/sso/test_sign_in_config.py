"""Sign-in rules and the password switch in the admin and the API: org admins only, scoped to their
organisation, validated alike, audited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from platform_core.models import AuditLog, Role, SignInRule, SignInSettings
from tests.platform_core.sso.conftest import OIDC_ID
from tests.platform_core.sso.factories import SignInRuleFactory, SignInSettingsFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(org_admin):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(org_admin)
    return client


def test_the_api_adds_a_feishu_rule_and_audits_it(admin_api, org, sso):
    reply = admin_api.post(
        "/api/v1/orgs/acme/sign-in-rules/",
        {"provider": "feishu", "feishu_tenant_key": " t-acme ", "role": "approver"},
        format="json",
    )

    assert reply.status_code == 201, reply.json()
    rule = SignInRule.objects.unscoped().get(organization=org)
    assert (rule.feishu_tenant_key, rule.role) == ("t-acme", Role.APPROVER)
    assert AuditLog.objects.filter(organization=org, action="sign_in_rule.created").count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"provider": "feishu", "feishu_tenant_key": ""}, "feishu_tenant_key"),
        ({"provider": "feishu", "feishu_tenant_key": "t", "email_domain": "a.example"}, "email_domain"),
        ({"provider": OIDC_ID, "email_domain": "not a domain"}, "email_domain"),
        ({"provider": OIDC_ID, "email_domain": "a.example", "feishu_tenant_key": "t"}, "feishu_tenant_key"),
        ({"provider": "github", "email_domain": "a.example"}, "provider"),
        ({"provider": OIDC_ID, "email_domain": "a.example", "role": "owner"}, "role"),
    ],
)
def test_the_api_refuses_a_rule_that_cannot_match_or_an_unknown_provider(admin_api, sso, body, field):
    reply = admin_api.post("/api/v1/orgs/acme/sign-in-rules/", body, format="json")

    assert reply.status_code == 400
    assert field in str(reply.json())
    assert not SignInRule.objects.unscoped().exists()


@pytest.mark.cross_org("sign-in-rule-list", "sign-in-rule-detail", "sign-in-settings")
def test_a_rule_of_another_org_is_404_and_its_list_is_hidden(admin_api, other_org, sso):
    foreign = SignInRuleFactory(organization=other_org)
    SignInSettingsFactory(organization=other_org, password_login=True)

    assert admin_api.get(f"/api/v1/orgs/acme/sign-in-rules/{foreign.pk}/").status_code == 404
    assert admin_api.delete(f"/api/v1/orgs/acme/sign-in-rules/{foreign.pk}/").status_code == 404
    assert admin_api.get("/api/v1/orgs/acme/sign-in-rules/").json()["results"] == []
    assert admin_api.get("/api/v1/orgs/globex/sign-in-rules/").status_code == 404
    assert SignInRule.objects.unscoped().filter(pk=foreign.pk).exists()
    assert admin_api.get("/api/v1/orgs/globex/sign-in-settings/").status_code == 404
    put = admin_api.put("/api/v1/orgs/globex/sign-in-settings/", {"password_login": False}, format="json")
    assert put.status_code == 404
    assert SignInSettings.objects.unscoped().get(organization=other_org).password_login is True


def test_members_cannot_read_or_change_sign_in_configuration(org, member, sso):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(member)

    assert client.get("/api/v1/orgs/acme/sign-in-rules/").status_code == 403
    assert client.put("/api/v1/orgs/acme/sign-in-settings/", {"password_login": False}).status_code == 403


def test_password_sign_in_can_be_switched_off_only_with_a_rule_and_is_audited(admin_api, org, sso):
    assert admin_api.get("/api/v1/orgs/acme/sign-in-settings/").json() == {"password_login": True}

    refused = admin_api.put("/api/v1/orgs/acme/sign-in-settings/", {"password_login": False}, format="json")
    assert refused.status_code == 400 and "sign-in rule first" in str(refused.json())

    SignInRuleFactory(organization=org)
    done = admin_api.put("/api/v1/orgs/acme/sign-in-settings/", {"password_login": False}, format="json")
    assert done.json() == {"password_login": False}
    assert SignInSettings.objects.unscoped().get(organization=org).password_login is False
    assert AuditLog.objects.filter(organization=org, action="sign_in_settings.created").exists()


def test_the_admin_adds_an_oidc_rule_for_a_domain(client, org, org_admin, sso):
    client.force_login(org_admin)

    page = client.post(
        reverse("admin:platform_core_signinrule_add"),
        {"organization": org.pk, "provider": OIDC_ID, "email_domain": "@ACME.example", "role": "member"},
    )

    assert page.status_code == 302, page.content.decode()[-2000:]
    assert SignInRule.objects.unscoped().get(organization=org).email_domain == "acme.example"


def test_the_admin_will_not_switch_passwords_off_without_a_rule(client, org, org_admin, sso):
    client.force_login(org_admin)

    page = client.post(
        reverse("admin:platform_core_signinsettings_add"), {"organization": org.pk, "password_login": ""}
    )

    assert page.status_code == 200
    assert "Add a sign-in rule first" in page.content.decode()
    assert not SignInSettings.objects.unscoped().exists()


def test_an_org_admin_sees_only_their_orgs_rules_in_the_admin(client, org, other_org, org_admin, sso):
    SignInRuleFactory(organization=org, feishu_tenant_key="ours")
    SignInRuleFactory(organization=other_org, feishu_tenant_key="theirs")
    SignInSettingsFactory(organization=other_org)
    client.force_login(org_admin)

    body = client.get(reverse("admin:platform_core_signinrule_changelist")).content.decode()

    assert "ours" in body and "theirs" not in body
