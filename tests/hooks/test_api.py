"""The guard rails' REST API: approvals and decisions for approvers; policies, Feishu channels (write-only
secrets), rate limits and per-agent hook settings for admins; another organisation's rows are 404."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection

from hooks.models import AgentHookSettings, ApprovalPolicy, ApprovalRequest, FeishuChannel, RateLimit
from platform_core.models import AuditLog, Role
from tests.agents.factories import AgentFactory
from tests.factories import ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import (
    AgentHookSettingsFactory,
    ApprovalPolicyFactory,
    ApprovalRequestFactory,
    FeishuChannelFactory,
    RateLimitFactory,
)

pytestmark = pytest.mark.django_db


def base(org) -> str:
    return f"/api/v1/orgs/{org.slug}"


# --- approvals ----------------------------------------------------------------------------------------


def test_an_approver_lists_the_requests_that_name_them_and_decides_one(client_for, org, approver):
    mine = ApprovalRequestFactory(organization=org, approver_users=[approver])
    ApprovalRequestFactory(organization=org)  # names only a Feishu approver
    client = client_for(approver)
    listed = client.get(f"{base(org)}/approvals/?status=pending").json()["results"]
    assert [a["id"] for a in listed] == [str(mine.pk)]
    assert listed[0]["approvers"]["users"] == [approver.username]

    response = client.post(
        f"{base(org)}/approvals/{mine.pk}/decide/", {"decision": "approve", "comment": "ok"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "approved" and body["decided_by"] == approver.username
    assert body["decided_via"] == "web" and body["comment"] == "ok"
    entry = AuditLog.objects.get(action="approval.approved")
    assert entry.actor == approver and entry.after["comment"] == "ok"


def test_deciding_twice_answers_409_with_the_first_outcome(client_for, org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    client = client_for(approver)
    client.post(f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "reject"}, format="json")
    again = client.post(
        f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert again.status_code == 409 and again.json()["status"] == "rejected"
    assert AuditLog.objects.filter(action__startswith="approval.").count() == 1


def test_a_platform_user_not_named_by_the_policy_cannot_decide(client_for, org, approver):
    other_approver = member_of(org, Role.APPROVER, username="otto")
    admin = member_of(org, Role.ADMIN, username="ada")
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    for user in (other_approver, admin):
        response = client_for(user).post(
            f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
        )
        assert response.status_code in (403, 404)
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_without_platform_approvers_owners_and_admins_decide_in_the_web_app(client_for, org, approver):
    approval = ApprovalRequestFactory(organization=org)  # Feishu approvers only
    admin = member_of(org, Role.ADMIN, username="ada")
    assert client_for(approver).post(
        f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    ).status_code in (403, 404)
    response = client_for(admin).post(
        f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert response.status_code == 200


def test_members_cannot_see_or_decide_approvals(client_for, org, member):
    approval = ApprovalRequestFactory(organization=org)
    client = client_for(member)
    assert client.get(f"{base(org)}/approvals/").status_code == 403
    assert (
        client.post(
            f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
        ).status_code
        == 403
    )


def test_a_bad_decision_is_a_400(client_for, org, approver):
    approval = ApprovalRequestFactory(organization=org, approver_users=[approver])
    response = client_for(approver).post(
        f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "maybe"}, format="json"
    )
    assert response.status_code == 400 and "decision" in response.json()


def test_the_approval_list_costs_a_fixed_number_of_queries(client_for, org, django_assert_max_num_queries):
    admin = member_of(org, Role.ADMIN, username="ada")
    client = client_for(admin)
    for _ in range(3):
        ApprovalRequestFactory(organization=org, approver_users=[admin])
    with django_assert_max_num_queries(12) as few:
        client.get(f"{base(org)}/approvals/")
    for _ in range(10):
        ApprovalRequestFactory(organization=org, approver_users=[admin])
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert len(client.get(f"{base(org)}/approvals/").json()["results"]) == 13


@pytest.mark.cross_org("approval-list", "approval-detail", "approval-decide")
def test_another_organisations_approvals_are_invisible_and_undecidable(client_for, org, other_org):
    admin = member_of(org, Role.ADMIN, username="ada")
    foreign = ApprovalRequestFactory(organization=other_org)
    client = client_for(admin)
    assert client.get(f"{base(org)}/approvals/").json()["results"] == []
    assert client.get(f"{base(org)}/approvals/{foreign.pk}/").status_code == 404
    response = client.post(
        f"{base(org)}/approvals/{foreign.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert response.status_code == 404
    foreign.refresh_from_db()
    assert foreign.status == "pending"
    assert client.get(f"{base(other_org)}/approvals/").status_code == 404


# --- policies -----------------------------------------------------------------------------------------


def test_an_admin_creates_a_policy_with_a_condition_and_it_is_audited(client_for, org, approver):
    admin = member_of(org, Role.ADMIN, username="ada")
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    channel = FeishuChannelFactory(organization=org)
    response = client_for(admin).post(
        f"{base(org)}/approval-policies/",
        {
            "name": "Large payments",
            "actions": [str(action.pk)],
            "condition": 'amount > 50000 and currency == "CNY"',
            "approver_open_ids": ["ou_boss"],
            "approver_users": [approver.pk],
            "channel": str(channel.pk),
            "timeout_seconds": 900,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    policy = ApprovalPolicy.objects.unscoped().get(pk=response.json()["id"])
    assert list(policy.actions.all()) == [action] and list(policy.approver_users.all()) == [approver]
    assert policy.organization == org and policy.timeout_seconds == 900
    entry = AuditLog.objects.get(action="approval_policy.created")
    assert entry.actor == admin and entry.after["actions"] == [str(action.pk)]


@pytest.mark.parametrize(
    "condition", ["__import__('os').system('true')", "amount.__class__", "len(items) > 2", "amount[0] > 1"]
)
def test_a_condition_that_is_not_in_the_safe_language_is_refused(client_for, org, condition):
    admin = member_of(org, Role.ADMIN, username="ada")
    connector = ConnectorFactory(organization=org)
    response = client_for(admin).post(
        f"{base(org)}/approval-policies/",
        {"name": "x", "connectors": [str(connector.pk)], "condition": condition},
        format="json",
    )
    assert response.status_code == 400 and "condition" in response.json()


def test_a_policy_cannot_point_at_another_organisations_rows_or_non_approvers(
    client_for, org, other_org, member, other_admin
):
    admin = member_of(org, Role.ADMIN, username="ada")
    client = client_for(admin)
    foreign_action = ConnectorActionFactory(connector=ConnectorFactory(organization=other_org))
    foreign_channel = FeishuChannelFactory(organization=other_org)
    own = ConnectorFactory(organization=org)
    for field, value in (
        ("actions", [str(foreign_action.pk)]),
        ("channel", str(foreign_channel.pk)),
        ("approver_users", [member.pk]),  # a plain member is no approver
        ("approver_users", [other_admin.pk]),  # an admin of another organisation
    ):
        payload = {"name": f"p-{uuid.uuid4().hex[:6]}", "connectors": [str(own.pk)], field: value}
        response = client.post(f"{base(org)}/approval-policies/", payload, format="json")
        assert response.status_code == 400 and field in response.json(), (field, response.content)
    assert not ApprovalPolicy.objects.unscoped().exists()


def test_members_cannot_manage_policies(client_for, org, member, approver):
    for user in (member, approver):
        assert client_for(user).get(f"{base(org)}/approval-policies/").status_code == 403


@pytest.mark.cross_org("approval-policy-list", "approval-policy-detail")
def test_another_organisations_policies_are_invisible_and_unchangeable(client_for, org, other_org):
    admin = member_of(org, Role.ADMIN, username="ada")
    foreign = ApprovalPolicyFactory(organization=other_org, name="theirs")
    client = client_for(admin)
    assert client.get(f"{base(org)}/approval-policies/").json()["results"] == []
    assert client.get(f"{base(org)}/approval-policies/{foreign.pk}/").status_code == 404
    assert (
        client.patch(
            f"{base(org)}/approval-policies/{foreign.pk}/", {"name": "mine"}, format="json"
        ).status_code
        == 404
    )
    assert client.delete(f"{base(org)}/approval-policies/{foreign.pk}/").status_code == 404
    foreign.refresh_from_db()
    assert foreign.name == "theirs"


# --- Feishu channels ----------------------------------------------------------------------------------


def test_channel_secrets_are_write_only_and_encrypted_at_rest(client_for, org):
    admin = member_of(org, Role.ADMIN, username="ada")
    client = client_for(admin)
    response = client.post(
        f"{base(org)}/feishu-channels/",
        {
            "name": "approvals",
            "app_id": "cli_123",
            "app_secret": "s3cret-app-secret",
            "verification_token": "v-token-abc",
            "encrypt_key": "enc-key-xyz",
            "default_chat_id": "oc_1",
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["has_app_secret"] and body["has_verification_token"] and body["has_encrypt_key"]
    assert body["callback_path"] == f"/integrations/feishu/{body['id']}/callback/"
    listed = client.get(f"{base(org)}/feishu-channels/").content
    for secret in (b"s3cret-app-secret", b"v-token-abc", b"enc-key-xyz"):
        assert secret not in response.content and secret not in listed
    channel = FeishuChannel.objects.unscoped().get(pk=body["id"])
    assert channel.app_secret == "s3cret-app-secret"
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT app_secret, verification_token, encrypt_key FROM hooks_feishuchannel WHERE id = %s",
            [channel.pk.hex if connection.vendor == "sqlite" else channel.pk],
        )
        raw = " ".join(cursor.fetchone())
    assert "s3cret" not in raw and "v-token" not in raw and "enc-key" not in raw
    audit = AuditLog.objects.get(action="feishu_channel.created")
    assert audit.after["app_secret_set"] is True and "s3cret" not in str(audit.after)

    # leaving a secret out keeps it; an empty string clears it
    client.patch(f"{base(org)}/feishu-channels/{channel.pk}/", {"name": "renamed"}, format="json")
    channel.refresh_from_db()
    assert channel.app_secret == "s3cret-app-secret" and channel.name == "renamed"
    client.patch(f"{base(org)}/feishu-channels/{channel.pk}/", {"encrypt_key": ""}, format="json")
    channel.refresh_from_db()
    assert channel.encrypt_key == "" and channel.verification_token == "v-token-abc"


def test_the_test_card_action_posts_to_the_default_chat(client_for, org, fake_feishu):
    admin = member_of(org, Role.ADMIN, username="ada")
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    response = client_for(admin).post(f"{base(org)}/feishu-channels/{channel.pk}/test-card/")
    assert response.status_code == 200 and response.json()["sent"] is True
    assert [m.chat_id for m in fake_feishu.sent] == ["oc_approvals"]
    fake_feishu.remove_bot_from_chat("oc_approvals")
    failed = client_for(admin).post(f"{base(org)}/feishu-channels/{channel.pk}/test-card/")
    assert failed.status_code == 502 and "230002" in failed.json()["error"]


@pytest.mark.cross_org("feishu-channel-list", "feishu-channel-detail", "feishu-channel-test-card")
def test_another_organisations_channels_are_invisible_and_unusable(client_for, org, other_org, fake_feishu):
    admin = member_of(org, Role.ADMIN, username="ada")
    foreign = FeishuChannelFactory(organization=other_org, base_url=fake_feishu.base_url, name="theirs")
    client = client_for(admin)
    assert client.get(f"{base(org)}/feishu-channels/").json()["results"] == []
    assert client.get(f"{base(org)}/feishu-channels/{foreign.pk}/").status_code == 404
    assert (
        client.patch(f"{base(org)}/feishu-channels/{foreign.pk}/", {"name": "x"}, format="json").status_code
        == 404
    )
    assert client.post(f"{base(org)}/feishu-channels/{foreign.pk}/test-card/").status_code == 404
    assert fake_feishu.sent == []
    foreign.refresh_from_db()
    assert foreign.name == "theirs"


# --- rate limits and per-agent hook settings -----------------------------------------------------------


def test_an_admin_sets_a_per_user_connector_limit(client_for, org):
    admin = member_of(org, Role.ADMIN, username="ada")
    connector = ConnectorFactory(organization=org)
    response = client_for(admin).post(
        f"{base(org)}/rate-limits/",
        {
            "name": "erp per user",
            "connector": str(connector.pk),
            "per_user": True,
            "max_calls": 5,
            "period_seconds": 60,
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    limit = RateLimit.objects.unscoped().get()
    assert limit.connector == connector and limit.per_user and limit.organization == org
    assert AuditLog.objects.filter(action="rate_limit.created").count() == 1


@pytest.mark.cross_org("rate-limit-list", "rate-limit-detail")
def test_another_organisations_rate_limits_are_invisible(client_for, org, other_org):
    admin = member_of(org, Role.ADMIN, username="ada")
    foreign = RateLimitFactory(organization=other_org, max_calls=3)
    client = client_for(admin)
    assert client.get(f"{base(org)}/rate-limits/").json()["results"] == []
    assert client.get(f"{base(org)}/rate-limits/{foreign.pk}/").status_code == 404
    assert (
        client.put(
            f"{base(org)}/rate-limits/{foreign.pk}/", {"name": "x", "max_calls": 1000}, format="json"
        ).status_code
        == 404
    )
    foreign.refresh_from_db()
    assert foreign.max_calls == 3
    foreign_connector = ConnectorFactory(organization=other_org)
    response = client.post(
        f"{base(org)}/rate-limits/",
        {"name": "y", "connector": str(foreign_connector.pk), "max_calls": 1},
        format="json",
    )
    assert response.status_code == 400


def test_hook_settings_are_one_per_agent_of_the_organisation(client_for, org, other_org):
    admin = member_of(org, Role.ADMIN, username="ada")
    agent = AgentFactory(organization=org)
    client = client_for(admin)
    payload = {"agent": str(agent.pk), "truncate_enabled": True, "max_observation_chars": 2000}
    assert client.post(f"{base(org)}/agent-hook-settings/", payload, format="json").status_code == 201
    assert client.post(f"{base(org)}/agent-hook-settings/", payload, format="json").status_code == 400
    foreign_agent = AgentFactory(organization=other_org)
    response = client.post(
        f"{base(org)}/agent-hook-settings/", {"agent": str(foreign_agent.pk)}, format="json"
    )
    assert response.status_code == 400
    assert AgentHookSettings.objects.unscoped().get().max_observation_chars == 2000


@pytest.mark.cross_org("agent-hook-settings-list", "agent-hook-settings-detail")
def test_another_organisations_hook_settings_are_invisible(client_for, org, other_org):
    admin = member_of(org, Role.ADMIN, username="ada")
    foreign = AgentHookSettingsFactory(agent=AgentFactory(organization=other_org), truncate_enabled=True)
    client = client_for(admin)
    assert client.get(f"{base(org)}/agent-hook-settings/").json()["results"] == []
    assert client.get(f"{base(org)}/agent-hook-settings/{foreign.pk}/").status_code == 404
    assert (
        client.patch(
            f"{base(org)}/agent-hook-settings/{foreign.pk}/", {"truncate_enabled": False}, format="json"
        ).status_code
        == 404
    )
    foreign.refresh_from_db()
    assert foreign.truncate_enabled is True


def test_deleting_configuration_is_audited(client_for, org):
    admin = member_of(org, Role.ADMIN, username="ada")
    limit = RateLimitFactory(organization=org)
    assert client_for(admin).delete(f"{base(org)}/rate-limits/{limit.pk}/").status_code == 204
    assert not RateLimit.objects.unscoped().exists()
    assert AuditLog.objects.get(action="rate_limit.deleted").before["max_calls"] == 10


def test_approval_requests_cannot_be_created_through_the_api(client_for, org):
    admin = member_of(org, Role.ADMIN, username="ada")
    response = client_for(admin).post(f"{base(org)}/approvals/", {"tool_name": "x"}, format="json")
    assert response.status_code == 405
    assert not ApprovalRequest.objects.unscoped().exists()
