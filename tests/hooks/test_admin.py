"""Admin pages of the guard rails (org-scoped; the generic isolation test covers other orgs' rows)."""

from __future__ import annotations

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.urls import reverse

from hooks.models import ApprovalPolicy, ApprovalRequest, FeishuChannel
from platform_core.models import AuditLog, Role
from tests.factories import ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.admin_forms import feishu_channel_add_form
from tests.hooks.factories import ApprovalRequestFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db


def test_an_admin_adds_a_policy_with_feishu_and_platform_approvers(
    admin_client, admin, org, approver, other_org
):
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    outsider = member_of(other_org, Role.APPROVER, username="olga")
    page = admin_client.get(reverse("admin:hooks_approvalpolicy_add"))
    choices = {u.username for u in page.context["adminform"].form.fields["approver_users"].queryset}
    assert approver.username in choices and outsider.username not in choices
    response = admin_client.post(
        reverse("admin:hooks_approvalpolicy_add"),
        {
            "organization": org.pk,
            "name": "Large payments",
            "actions": [str(action.pk)],
            "writes_only": "on",
            "condition": "amount > 50000",
            "approver_open_ids_text": "ou_boss\n\n ou_cfo ",
            "approver_users": [approver.pk],
            "timeout_seconds": 600,
            "is_active": "on",
        },
    )
    assert response.status_code == 302, response.context["adminform"].form.errors
    policy = ApprovalPolicy.objects.unscoped().get()
    assert policy.approver_open_ids == ["ou_boss", "ou_cfo"] and list(policy.approver_users.all()) == [
        approver
    ]
    entry = AuditLog.objects.get(action="approval_policy.created")
    assert entry.actor == admin and entry.after["approver_users"] == [str(approver.pk)]


def test_a_policy_with_an_unsafe_condition_is_refused_in_the_admin(admin_client, org):
    connector = ConnectorFactory(organization=org)
    response = admin_client.post(
        reverse("admin:hooks_approvalpolicy_add"),
        {
            "organization": org.pk,
            "name": "bad",
            "connectors": [str(connector.pk)],
            "condition": "__import__('os').system('id')",
            "timeout_seconds": 600,
        },
    )
    assert response.status_code == 200 and "condition" in response.context["adminform"].form.errors
    assert not ApprovalPolicy.objects.unscoped().exists()


def test_channel_secrets_are_never_shown_and_blank_keeps_them(admin_client, org):
    url = reverse("admin:hooks_feishuchannel_add")
    response = admin_client.post(url, feishu_channel_add_form(org))
    assert response.status_code == 302
    channel = FeishuChannel.objects.unscoped().get()
    change = reverse("admin:hooks_feishuchannel_change", args=[channel.pk])
    page = admin_client.get(change).content.decode()
    for secret in ("app-secret-value", "verify-token-value", "encrypt-key-value"):
        assert secret not in page
    assert channel.callback_path in page
    admin_client.post(
        change,
        {
            "organization": org.pk,
            "name": "renamed",
            "app_id": "cli_1",
            "receive_id_type": "chat_id",
            "language": "zh-hans",
            "is_active": "on",
        },
    )
    channel.refresh_from_db()
    assert channel.name == "renamed" and channel.app_secret == "app-secret-value"
    assert channel.encrypt_key == "encrypt-key-value"
    updated = AuditLog.objects.get(action="feishu_channel.updated")
    assert updated.after == {"name": "renamed"}


def test_the_send_a_test_card_action_reaches_the_default_chat(admin_client, org, fake_feishu):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    response = admin_client.post(
        reverse("admin:hooks_feishuchannel_changelist"),
        {"action": "send_test_card", ACTION_CHECKBOX_NAME: [str(channel.pk)]},
        follow=True,
    )
    assert "test card sent" in response.content.decode()
    assert [m.chat_id for m in fake_feishu.sent] == ["oc_approvals"]
    fake_feishu.fail(times=1, status=400)
    response = admin_client.post(
        reverse("admin:hooks_feishuchannel_changelist"),
        {"action": "send_test_card", ACTION_CHECKBOX_NAME: [str(channel.pk)]},
        follow=True,
    )
    assert "could not be sent" in response.content.decode()


def test_approval_requests_are_a_read_only_history(admin_client, org):
    approval = ApprovalRequestFactory(organization=org)
    assert admin_client.get(reverse("admin:hooks_approvalrequest_changelist")).status_code == 200
    assert admin_client.get(reverse("admin:hooks_approvalrequest_add")).status_code == 403
    change = reverse("admin:hooks_approvalrequest_change", args=[approval.pk])
    assert admin_client.get(change).status_code == 200
    admin_client.post(change, {"status": "approved"})
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert (
        admin_client.post(reverse("admin:hooks_approvalrequest_delete", args=[approval.pk])).status_code
        == 403
    )
    assert ApprovalRequest.objects.unscoped().filter(pk=approval.pk).exists()
