"""Issue 31: a sign-in rule claims an e-mail domain or a Feishu tenant. A claim routes no sign-in until an
operator approves it (``manage.py sign_in_rules approve``, or a superuser in the admin), audited; org
admins can neither approve their own claims nor change what an approved rule matches."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import reverse

from platform_core.models import AuditLog, Membership, Role, SignInRule, SignInSettings
from tests.factories import PASSWORD, UserFactory
from tests.platform_core.sso.conftest import OIDC_ID
from tests.platform_core.sso.factories import SignInRuleFactory, SignInSettingsFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api(client_for, org_admin):
    return client_for(org_admin)


def _claim(admin_api, domain="rtb-corp.example"):
    reply = admin_api.post(
        "/api/v1/orgs/acme/sign-in-rules/",
        {"provider": OIDC_ID, "email_domain": domain, "role": "admin", "approved": True},
        format="json",
    )
    assert reply.status_code == 201, reply.content
    return reply


def test_a_domain_claimed_through_the_api_is_unapproved_and_routes_no_sign_in(client, admin_api, org, sso):
    reply = _claim(admin_api)
    assert reply.json()["approved"] is False
    sso.oidc.sign_in_as("bob@rtb-corp.example", name="Bob")

    done = sso.oidc_sign_in(client)

    assert done["Location"] == "/login/" and "_auth_user_id" not in client.session
    assert not Membership.objects.filter(organization=org).exclude(user__username="ada").exists()
    assert not get_user_model().objects.filter(email__iexact="bob@rtb-corp.example").exists()


def test_a_domain_claimed_in_the_admin_is_unapproved_and_the_org_admin_cannot_approve_it(
    client, org, org_admin, sso
):
    client.force_login(org_admin)
    client.post(
        reverse("admin:platform_core_signinrule_add"),
        {
            "organization": org.pk,
            "provider": OIDC_ID,
            "email_domain": "rtb-corp.example",
            "role": "member",
            "approved_at": "2020-01-01 00:00:00",
        },
    )
    rule = SignInRule.objects.unscoped().get(organization=org)
    assert rule.approved_at is None

    approved = client.post(
        reverse("admin:platform_core_signinrule_changelist"),
        {"action": "approve_rules", "_selected_action": [rule.pk]},
    )
    assert approved.status_code in (200, 302)
    rule.refresh_from_db()
    assert rule.approved_at is None


def test_the_operator_approves_a_claim_by_command_and_then_it_routes(client, admin_api, org, sso):
    rule_id = _claim(admin_api).json()["id"]

    call_command("sign_in_rules", "approve", str(rule_id))

    rule = SignInRule.objects.unscoped().get(pk=rule_id)
    assert rule.approved_at is not None
    row = AuditLog.objects.get(organization=org, action="sign_in_rule.approved")
    assert row.actor is None and row.after["email_domain"] == "rtb-corp.example"
    assert admin_api.get(f"/api/v1/orgs/acme/sign-in-rules/{rule_id}/").json()["approved"] is True
    sso.oidc.sign_in_as("bob@rtb-corp.example", name="Bob")
    sso.oidc_sign_in(client)
    assert (
        Membership.objects.get(organization=org, user__email__iexact="bob@rtb-corp.example").role
        == Role.ADMIN
    )


def test_the_operator_withdraws_an_approval_and_the_claim_stops_routing(client, org, sso):
    rule = SignInRuleFactory(
        organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example"
    )

    call_command("sign_in_rules", "withdraw", str(rule.pk))

    rule.refresh_from_db()
    assert rule.approved_at is None
    assert AuditLog.objects.filter(organization=org, action="sign_in_rule.approval_withdrawn").exists()
    sso.oidc.sign_in_as("grace@acme.example")
    assert sso.oidc_sign_in(client)["Location"] == "/login/"


def test_the_command_lists_pending_claims_and_refuses_an_unknown_rule(admin_api, org, other_org, capsys, sso):
    _claim(admin_api)
    SignInRuleFactory(
        organization=other_org, provider=OIDC_ID, feishu_tenant_key="", email_domain="rtb-corp.example"
    )

    call_command("sign_in_rules", "list", "--pending")

    out = capsys.readouterr().out
    assert "rtb-corp.example" in out and "acme" in out and "globex" not in out
    with pytest.raises(CommandError):
        call_command("sign_in_rules", "approve", "999999")


def test_a_superuser_approves_in_the_admin_audited(client, org, sso):
    rule = SignInRuleFactory(
        organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="x.example", approved_at=None
    )
    root = UserFactory(username="root", is_superuser=True, is_staff=True)
    client.force_login(root)

    client.post(
        reverse("admin:platform_core_signinrule_changelist"),
        {"action": "approve_rules", "_selected_action": [rule.pk]},
    )

    rule.refresh_from_db()
    assert rule.approved_at is not None and rule.approved_by == root
    assert AuditLog.objects.get(organization=org, action="sign_in_rule.approved").actor == root


def test_an_unapproved_feishu_tenant_claim_routes_no_sign_in_either(client, org, sso):
    SignInRuleFactory(
        organization=org, provider="feishu", feishu_tenant_key="globex-tenant", approved_at=None
    )
    sso.feishu.sign_in_as("Gus", tenant_key="globex-tenant")

    assert sso.feishu_sign_in(client)["Location"] == "/login/"
    assert not Membership.objects.filter(organization=org).exists()


def test_an_approved_rules_match_cannot_be_changed_only_its_role(admin_api, org, sso):
    rule = SignInRuleFactory(
        organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example"
    )

    moved = admin_api.patch(
        f"/api/v1/orgs/acme/sign-in-rules/{rule.pk}/", {"email_domain": "rtb-corp.example"}, format="json"
    )
    assert moved.status_code == 400
    rule.refresh_from_db()
    assert rule.email_domain == "acme.example" and rule.approved_at is not None
    role = admin_api.patch(f"/api/v1/orgs/acme/sign-in-rules/{rule.pk}/", {"role": "approver"}, format="json")
    assert role.status_code == 200 and role.json()["approved"] is True


def test_the_admin_will_not_move_an_approved_rule_to_another_domain(client, org, org_admin, sso):
    rule = SignInRuleFactory(
        organization=org, provider=OIDC_ID, feishu_tenant_key="", email_domain="acme.example"
    )
    client.force_login(org_admin)

    client.post(
        reverse("admin:platform_core_signinrule_change", args=[rule.pk]),
        {"organization": org.pk, "provider": OIDC_ID, "email_domain": "rtb-corp.example", "role": "member"},
    )

    rule.refresh_from_db()
    assert rule.email_domain == "acme.example"


def test_passwords_cannot_be_switched_off_on_an_unapproved_claim(admin_api, client, org, org_admin, sso):
    _claim(admin_api)

    refused = admin_api.put("/api/v1/orgs/acme/sign-in-settings/", {"password_login": False}, format="json")
    assert refused.status_code == 400
    client.force_login(org_admin)
    page = client.post(
        reverse("admin:platform_core_signinsettings_add"), {"organization": org.pk, "password_login": ""}
    )
    assert page.status_code == 200 and not SignInSettings.objects.unscoped().exists()


def test_a_password_switch_without_an_approved_rule_locks_nobody_out(client, org, member):
    SignInRuleFactory(organization=org, approved_at=None)
    SignInSettingsFactory(organization=org, password_login=False)  # e.g. rules made before approval existed

    assert client.login(username=member.username, password=PASSWORD)
