"""Feishu sign-in end to end against the fake Feishu's OAuth endpoints (issue 20)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages

from platform_core.identity.linked_identities import user_for_feishu_open_id
from platform_core.models import AuditLog, LinkedIdentity, Membership, Role
from tests.factories import UserFactory, member_of
from tests.platform_core.sso.factories import SignInRuleFactory

pytestmark = pytest.mark.django_db

TENANT = "tenant-acme"


def _signed_in_user(client):
    return get_user_model().objects.get(pk=client.session["_auth_user_id"])


def test_a_new_feishu_user_of_an_admitted_tenant_joins_the_org_with_the_rules_role(
    client, sso, org, other_org
):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key=TENANT, role=Role.APPROVER)
    SignInRuleFactory(organization=other_org, provider="feishu", feishu_tenant_key="tenant-globex")
    person = sso.feishu.sign_in_as("Han Meimei", tenant_key=TENANT, enterprise_email="han@acme.example")

    done = sso.feishu_sign_in(client)

    assert done.status_code == 302 and done["Location"] == "/"
    user = _signed_in_user(client)
    assert user.email == "han@acme.example"
    memberships = list(Membership.objects.filter(user=user).values_list("organization__slug", "role"))
    assert memberships == [("acme", Role.APPROVER)]
    identity = LinkedIdentity.objects.get(user=user)
    assert (identity.open_id, identity.union_id, identity.tenant_key) == (
        person.open_id,
        person.union_id,
        TENANT,
    )
    assert user_for_feishu_open_id(org, person.open_id) == user
    assert AuditLog.objects.filter(organization=org, action="membership.created").count() == 1
    assert [r.path for r in sso.feishu.requests] == [
        "/open-apis/authen/v1/index",
        "/open-apis/auth/v3/app_access_token/internal",
        "/open-apis/authen/v1/access_token",
        "/open-apis/authen/v1/user_info",
    ]


def test_a_feishu_user_of_another_tenant_is_refused_with_a_clear_message(client, sso, org):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key=TENANT)
    sso.feishu.sign_in_as("Stranger", tenant_key="tenant-elsewhere")

    done = sso.feishu_sign_in(client)

    assert done.status_code == 302 and done["Location"] == "/login/"
    assert "_auth_user_id" not in client.session
    assert get_user_model().objects.count() == 0
    assert not LinkedIdentity.objects.exists()
    [message] = [str(m) for m in get_messages(done.wsgi_request)]
    assert "tenant-elsewhere" in message and "sign-in rule" in message


def test_an_existing_member_signing_in_with_feishu_gets_linked(client, sso, org):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key=TENANT)
    local = member_of(org, Role.ADMIN, username="lei", email="lei@acme.example")
    person = sso.feishu.sign_in_as("Li Lei", tenant_key=TENANT, enterprise_email="LEI@acme.example")

    sso.feishu_sign_in(client)

    assert _signed_in_user(client) == local
    assert Membership.objects.get(user=local, organization=org).role == Role.ADMIN  # unchanged
    assert LinkedIdentity.objects.get(user=local).open_id == person.open_id
    assert get_user_model().objects.count() == 1


def test_the_same_feishu_account_signs_in_as_the_same_user_next_time(client, sso, org):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key=TENANT)
    sso.feishu.sign_in_as("Han Meimei", open_id="ou_han", union_id="on_han", tenant_key=TENANT)
    sso.feishu_sign_in(client)
    first = _signed_in_user(client)
    client.logout()

    sso.feishu_sign_in(client)

    assert _signed_in_user(client) == first
    assert get_user_model().objects.count() == 1


def test_an_email_of_a_user_outside_the_admitted_org_never_takes_over_that_account(
    client, sso, org, other_org
):
    SignInRuleFactory(organization=org, provider="feishu", feishu_tenant_key=TENANT)
    outsider = member_of(other_org, Role.OWNER, username="boss", email="boss@globex.example")
    sso.feishu.sign_in_as("Boss?", tenant_key=TENANT, enterprise_email="boss@globex.example")

    sso.feishu_sign_in(client)

    assert _signed_in_user(client) != outsider
    assert not LinkedIdentity.objects.filter(user=outsider).exists()


def test_a_signed_in_user_without_an_org_rule_still_signs_in_with_a_password(client, org):
    UserFactory(username="plain")
    assert client.login(username="plain", password="correct horse battery staple")
