"""Changes of a Feishu channel's credentials and of a policy's approver lists are audited with who and
when, from the admin and the API alike; secret values never reach the audit log."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from hooks.models import ApprovalPolicy, FeishuChannel
from platform_core.models import AuditLog
from tests.factories import ConnectorActionFactory, ConnectorFactory
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db

NEW_KEY = "brand-new-encrypt-key-value"


def _channel_form(channel: FeishuChannel, **changes: str) -> dict[str, str]:
    data = {
        "organization": str(channel.organization_id),
        "name": channel.name,
        "app_id": channel.app_id,
        "base_url": channel.base_url,
        "default_chat_id": channel.default_chat_id,
        "receive_id_type": channel.receive_id_type,
        "language": channel.language,
        "is_active": "on",
    }
    data.update(changes)
    return data


def _edit_channel_in_admin(admin_client, channel, **changes):
    response = admin_client.post(
        reverse("admin:hooks_feishuchannel_change", args=[channel.pk]), _channel_form(channel, **changes)
    )
    assert response.status_code == 302, response.context["adminform"].form.errors


def _edit_channel_in_api(client_for, admin, channel, **changes):
    response = client_for(admin).patch(
        f"/api/v1/orgs/{channel.organization.slug}/feishu-channels/{channel.pk}/", changes, format="json"
    )
    assert response.status_code == 200, response.content


@pytest.mark.parametrize("path", ["admin", "api"])
@pytest.mark.parametrize(
    ("field", "form_field"),
    [
        ("encrypt_key", "encrypt_key_input"),
        ("verification_token", "verification_token_input"),
        ("app_secret", "app_secret_input"),
    ],
)
def test_replacing_a_stored_secret_is_audited_as_changed_without_its_value(
    admin_client, client_for, admin, org, path, field, form_field
):
    channel = FeishuChannelFactory(organization=org)
    if path == "admin":
        _edit_channel_in_admin(admin_client, channel, **{form_field: NEW_KEY})
    else:
        _edit_channel_in_api(client_for, admin, channel, **{field: NEW_KEY})
    entry = AuditLog.objects.get(action="feishu_channel.updated")
    assert entry.actor == admin and entry.created_at is not None
    assert entry.after[field] == "changed"
    assert entry.after["credentials_version"] > entry.before["credentials_version"]
    assert NEW_KEY not in json.dumps([entry.before, entry.after])


@pytest.mark.parametrize("path", ["admin", "api"])
def test_changing_the_app_id_is_audited_as_a_credential_change(admin_client, client_for, admin, org, path):
    channel = FeishuChannelFactory(organization=org)
    if path == "admin":
        _edit_channel_in_admin(admin_client, channel, app_id="cli_other")
    else:
        _edit_channel_in_api(client_for, admin, channel, app_id="cli_other")
    entry = AuditLog.objects.get(action="feishu_channel.updated")
    assert entry.after["app_id"] == "cli_other" and "credentials_version" in entry.after


def _policy_form(policy: ApprovalPolicy, **changes):
    data = {
        "organization": str(policy.organization_id),
        "name": policy.name,
        "actions": [str(a.pk) for a in policy.actions.all()],
        "writes_only": "on",
        "condition": policy.condition,
        "approver_open_ids_text": "\n".join(policy.approver_open_ids),
        "approver_users": [str(u.pk) for u in policy.approver_users.all()],
        "timeout_seconds": str(policy.timeout_seconds),
        "is_active": "on",
    }
    data.update(changes)
    return data


@pytest.fixture
def policy(org, approver):
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    return ApprovalPolicyFactory(
        organization=org, actions=[action], approver_open_ids=["ou_boss"], approver_users=[approver]
    )


@pytest.mark.parametrize("path", ["admin", "api"])
def test_approver_list_changes_are_audited_with_who_and_when(
    admin_client, client_for, admin, org, policy, approver, path
):
    if path == "admin":
        response = admin_client.post(
            reverse("admin:hooks_approvalpolicy_change", args=[policy.pk]),
            _policy_form(policy, approver_open_ids_text="ou_boss\nou_admin", approver_users=[str(admin.pk)]),
        )
        assert response.status_code == 302, response.context["adminform"].form.errors
    else:
        response = client_for(admin).patch(
            f"/api/v1/orgs/{org.slug}/approval-policies/{policy.pk}/",
            {"approver_open_ids": ["ou_boss", "ou_admin"], "approver_users": [admin.pk]},
            format="json",
        )
        assert response.status_code == 200, response.content
    entry = AuditLog.objects.get(action="approval_policy.updated")
    assert entry.actor == admin and entry.created_at is not None
    assert entry.before["approver_open_ids"] == ["ou_boss"]
    assert entry.after["approver_open_ids"] == ["ou_boss", "ou_admin"]
    assert entry.before["approver_users"] == [str(approver.pk)]
    assert entry.after["approver_users"] == [str(admin.pk)]
