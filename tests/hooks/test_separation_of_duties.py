"""Separation of duties: with ``approval_config_cooldown_hours`` set, whoever changed the approval
configuration in the last N hours cannot decide the organisation's requests (web, API and Feishu)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from hooks.models import ApprovalRequest
from hooks.services import approval_request_create
from platform_core.models import AuditLog, Organization, Role
from platform_core.services import organization_set_approval_cooldown
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory
from tests.hooks.wsgi_client import WsgiApi

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for(wsgi):
    return lambda user: WsgiApi(wsgi, user)


BOSS = "ou_boss"


@pytest.fixture
def admins(org):
    return member_of(org, Role.ADMIN, username="ada"), member_of(org, Role.OWNER, username="oscar")


@pytest.fixture
def policy(org, fake_feishu):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    # no platform approvers: owners and admins decide in the web app
    return ApprovalPolicyFactory(
        organization=org, actions=[action], approver_open_ids=[BOSS], channel=channel
    )


def _request(org, policy, capture) -> ApprovalRequest:
    with capture(execute=True):
        approval = approval_request_create(
            organization_id=org.pk, policy=policy, tool_name="erp__create_payment", arguments={"amount": 1}
        )
    approval.refresh_from_db()
    return approval


def _change_policy_via_api(client_for, user, org, policy, **changes):
    response = client_for(user).patch(
        f"/api/v1/orgs/{org.slug}/approval-policies/{policy.pk}/", changes, format="json"
    )
    assert response.status_code == 200, response.content


def _decide_via_api(client_for, user, org, approval):
    return client_for(user).post(
        f"/api/v1/orgs/{org.slug}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )


def test_an_admin_who_changed_a_policy_cannot_decide_in_the_api_while_another_admin_can(
    client_for, org, admins, policy, django_capture_on_commit_callbacks
):
    ada, oscar = admins
    Organization.objects.filter(pk=org.pk).update(approval_config_cooldown_hours=24)
    _change_policy_via_api(client_for, ada, org, policy, timeout_seconds=900)
    approval = _request(org, policy, django_capture_on_commit_callbacks)

    refused = _decide_via_api(client_for, ada, org, approval)
    assert refused.status_code == 403 and "24 hours" in str(refused.json())
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert _decide_via_api(client_for, oscar, org, approval).status_code == 200


def test_without_a_cooldown_the_admin_who_changed_a_policy_decides(
    client_for, org, admins, policy, django_capture_on_commit_callbacks
):
    ada, _oscar = admins
    _change_policy_via_api(client_for, ada, org, policy, timeout_seconds=900)
    approval = _request(org, policy, django_capture_on_commit_callbacks)
    assert _decide_via_api(client_for, ada, org, approval).status_code == 200


def test_the_cooldown_ends_after_n_hours(client_for, org, admins, policy, django_capture_on_commit_callbacks):
    ada, _oscar = admins
    Organization.objects.filter(pk=org.pk).update(approval_config_cooldown_hours=2)
    _change_policy_via_api(client_for, ada, org, policy, timeout_seconds=900)
    old = timezone.now() - timedelta(hours=3)
    # the audit log is append-only: rewrite the time through the raw table for this test
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {AuditLog._meta.db_table} SET created_at = %s", [old])
    approval = _request(org, policy, django_capture_on_commit_callbacks)
    assert _decide_via_api(client_for, ada, org, approval).status_code == 200


def test_the_inbox_refuses_the_decision_of_an_admin_who_changed_a_channel(
    client, client_for, org, admins, policy, django_capture_on_commit_callbacks
):
    ada, _oscar = admins
    Organization.objects.filter(pk=org.pk).update(approval_config_cooldown_hours=24)
    response = client_for(ada).patch(
        f"/api/v1/orgs/{org.slug}/feishu-channels/{policy.channel_id}/", {"name": "renamed"}, format="json"
    )
    assert response.status_code == 200
    approval = _request(org, policy, django_capture_on_commit_callbacks)
    assert client.login(username=ada.username, password=PASSWORD)
    response = client.post(
        reverse("approvals-inbox-decide", kwargs={"org_slug": org.slug, "approval_id": approval.pk}),
        {"decision": "approve"},
    )
    assert response.status_code == 403
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_lowering_the_cooldown_does_not_lift_it_for_the_one_who_lowered_it(
    client_for, org, admins, policy, django_capture_on_commit_callbacks
):
    ada, _oscar = admins
    organization_set_approval_cooldown(organization=org, actor=None, hours=24)
    response = client_for(ada).patch(
        f"/api/v1/orgs/{org.slug}/settings/", {"approval_config_cooldown_hours": 0}, format="json"
    )
    assert response.status_code == 200 and response.json()["approval_config_cooldown_hours"] == 0
    entry = AuditLog.objects.get(action="organization.approval_cooldown.changed", actor=ada)
    assert entry.before == {"approval_config_cooldown_hours": 24}
    approval = _request(org, policy, django_capture_on_commit_callbacks)
    assert _decide_via_api(client_for, ada, org, approval).status_code == 403


def test_members_cannot_change_the_cooldown(client_for, org, member):
    response = client_for(member).patch(
        f"/api/v1/orgs/{org.slug}/settings/", {"approval_config_cooldown_hours": 0}, format="json"
    )
    assert response.status_code == 403
    assert (
        client_for(member).get(f"/api/v1/orgs/{org.slug}/settings/").json()["approval_config_cooldown_hours"]
        == 0
    )


def test_a_feishu_click_is_refused_on_a_channel_whose_keys_changed_within_the_cooldown(
    fake_feishu, wsgi, client_for, org, admins, policy, django_capture_on_commit_callbacks
):
    ada, _oscar = admins
    Organization.objects.filter(pk=org.pk).update(approval_config_cooldown_hours=24)
    response = client_for(ada).patch(
        f"/api/v1/orgs/{org.slug}/feishu-channels/{policy.channel_id}/",
        {"encrypt_key": "k-ada-chosen-key", "verification_token": "t-ada-chosen-token"},
        format="json",
    )
    assert response.status_code == 200
    approval = _request(org, policy, django_capture_on_commit_callbacks)  # bound to the new keys
    status, reply = fake_feishu.click(
        f"http://testserver/integrations/feishu/{policy.channel_id}/callback/",
        client=wsgi,
        approval_id=str(approval.pk),
        operator_open_id=BOSS,
        encrypt_key="k-ada-chosen-key",
        verification_token="t-ada-chosen-token",
    )
    assert status == 200 and reply["toast"]["type"] == "error" and "24 hours" in reply["toast"]["content"]
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_feishu_user_added_as_approver_within_the_cooldown_cannot_decide_by_card(
    fake_feishu, wsgi, client_for, org, admins, policy, django_capture_on_commit_callbacks
):
    ada, _oscar = admins
    Organization.objects.filter(pk=org.pk).update(approval_config_cooldown_hours=24)
    _change_policy_via_api(client_for, ada, org, policy, approver_open_ids=[BOSS, "ou_ada"])
    approval = _request(org, policy, django_capture_on_commit_callbacks)
    callback = f"http://testserver/integrations/feishu/{policy.channel_id}/callback/"
    status, reply = fake_feishu.click(
        callback, client=wsgi, approval_id=str(approval.pk), operator_open_id="ou_ada"
    )
    assert reply["toast"]["type"] == "error"
    approval.refresh_from_db()
    assert approval.status == "pending"
    status, reply = fake_feishu.click(
        callback, client=wsgi, approval_id=str(approval.pk), operator_open_id=BOSS
    )
    assert reply["toast"]["type"] == "success"


def test_the_cooldown_is_set_in_the_organisation_admin(client, org, admins):
    ada, _oscar = admins
    assert client.login(username=ada.username, password=PASSWORD)
    page = client.get(reverse("admin:platform_core_organization_change", args=[org.pk]))
    assert "approval_config_cooldown_hours" in page.content.decode()
    response = client.post(
        reverse("admin:platform_core_organization_change", args=[org.pk]),
        {"name": org.name, "read_only_reason": "", "approval_config_cooldown_hours": "12"},
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    org.refresh_from_db()
    assert org.approval_config_cooldown_hours == 12
    assert AuditLog.objects.filter(action="organization.approval_cooldown.changed", actor=ada).exists()
