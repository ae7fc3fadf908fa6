"""A request is bound at creation to its channel, that channel's credentials version and its approvers:
a correctly signed click on another channel, or on the same channel after its keys changed, decides
nothing (issue #14, "An org admin can forge a Feishu approval"); a re-send re-binds it, audited."""

from __future__ import annotations

from typing import Any

import pytest

from hooks.models import ApprovalRequest, FeishuChannel
from hooks.services import approval_request_create, approval_resend
from platform_core.models import AuditLog, Role
from tests.factories import ConnectorActionFactory, ConnectorFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory
from tests.hooks.wsgi_client import WsgiApi

pytestmark = pytest.mark.django_db


@pytest.fixture
def client_for(wsgi):
    return lambda user: WsgiApi(wsgi, user)


BOSS = "ou_boss"
ADMIN_KEY, ADMIN_TOKEN = "key-the-admin-chose", "token-the-admin-chose"


@pytest.fixture
def world(org, approver, fake_feishu, django_capture_on_commit_callbacks):
    """A policy routing large payments to channel A for the boss (Feishu) and April (web), and a
    pending request whose card went out on channel A."""
    channel = FeishuChannelFactory(organization=org, name="A", base_url=fake_feishu.base_url)
    action = ConnectorActionFactory(connector=ConnectorFactory(organization=org), method="POST")
    policy = ApprovalPolicyFactory(
        organization=org,
        actions=[action],
        approver_open_ids=[BOSS],
        approver_users=[approver],
        channel=channel,
    )
    with django_capture_on_commit_callbacks(execute=True):
        approval = approval_request_create(
            organization_id=org.pk,
            policy=policy,
            tool_name="erp__create_payment",
            arguments={"order_id": "SO-1002", "amount": 60000},
        )
    approval.refresh_from_db()
    assert approval.card_status == "sent"
    return channel, policy, approval


def url(channel: FeishuChannel) -> str:
    return f"http://testserver/integrations/feishu/{channel.pk}/callback/"


def boss_clicks_signed_with_admin_keys(
    fake_feishu, wsgi, channel: FeishuChannel, approval
) -> tuple[int, Any]:
    """The boss's click on ``approval`` arriving on ``channel``, signed with the keys the admin chose."""
    return fake_feishu.click(
        url(channel),
        client=wsgi,
        approval_id=str(approval.pk),
        operator_open_id=BOSS,
        encrypt_key=ADMIN_KEY,
        verification_token=ADMIN_TOKEN,
    )


def base(org) -> str:
    return f"/api/v1/orgs/{org.slug}"


def test_the_request_records_its_channel_credentials_version_and_approvers(world, approver):
    channel, _policy, approval = world
    assert approval.channel_id == channel.pk
    assert approval.channel_credentials_version == channel.credentials_version
    assert approval.approver_open_ids == [BOSS] and list(approval.approver_users.all()) == [approver]


def test_a_signed_click_on_a_second_channel_of_the_org_decides_nothing(fake_feishu, wsgi, world, org):
    # given a second channel of the same organisation, with keys an org admin chose
    channel, _policy, approval = world
    second = FeishuChannelFactory(
        organization=org, name="B", encrypt_key=ADMIN_KEY, verification_token=ADMIN_TOKEN
    )
    # when a correctly signed click for the request arrives on it, as the boss
    status, reply = boss_clicks_signed_with_admin_keys(fake_feishu, wsgi, second, approval)
    # then nothing is decided and the clicker is told why
    assert status == 200 and reply["toast"]["type"] == "error" and "card" not in reply
    assert "another Feishu channel" in reply["toast"]["content"]
    approval.refresh_from_db()
    assert approval.status == "pending" and not AuditLog.objects.filter(action="approval.approved").exists()
    # and the boss still decides on the channel the card was sent on
    status, reply = fake_feishu.click(
        url(channel), client=wsgi, approval_id=str(approval.pk), operator_open_id=BOSS
    )
    assert reply["toast"]["type"] == "success"
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by_open_id == BOSS


def test_an_admin_who_changed_the_channel_keys_cannot_sign_a_click_as_the_approver(
    fake_feishu, wsgi, world, org, client_for, django_capture_on_commit_callbacks
):
    channel, _policy, approval = world
    admin = member_of(org, Role.ADMIN, username="ada")
    client = client_for(admin)
    # the admin is not an approver: the API refuses his decision
    refused = client.post(
        f"{base(org)}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert refused.status_code == 403
    # when he changes the channel's keys through the API and signs a click as the boss
    changed = client.patch(
        f"{base(org)}/feishu-channels/{channel.pk}/",
        {"encrypt_key": ADMIN_KEY, "verification_token": ADMIN_TOKEN},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    status, reply = boss_clicks_signed_with_admin_keys(fake_feishu, wsgi, channel, approval)
    # then the request is not decided: it must be re-sent
    assert status == 200 and reply["toast"]["type"] == "error" and "card" not in reply
    assert "re-sent" in reply["toast"]["content"]
    approval.refresh_from_db()
    assert approval.status == "pending" and approval.decided_by_open_id == ""

    # when the admin re-sends it, a new card goes out on the channel's new credentials, audited
    sent_before = len(fake_feishu.sent)
    with django_capture_on_commit_callbacks(execute=True):
        resent = client.post(f"{base(org)}/approvals/{approval.pk}/resend/")
    assert resent.status_code == 200, resent.content
    assert len(fake_feishu.sent) == sent_before + 1
    entry = AuditLog.objects.get(action="approval.resent")
    assert entry.actor == admin and entry.target_id == str(approval.pk)
    approval.refresh_from_db()
    channel.refresh_from_db()
    assert approval.channel_credentials_version == channel.credentials_version
    # and the boss decides on the new card
    status, reply = boss_clicks_signed_with_admin_keys(fake_feishu, wsgi, channel, approval)
    assert reply["toast"]["type"] == "success"
    approval.refresh_from_db()
    assert approval.status == "approved"


def test_a_policy_moved_to_another_channel_leaves_pending_requests_bound_until_re_sent(
    fake_feishu, wsgi, world, org, django_capture_on_commit_callbacks
):
    channel, policy, approval = world
    second = FeishuChannelFactory(organization=org, name="B", base_url=fake_feishu.base_url)
    policy.channel = second
    policy.approver_open_ids = ["ou_cfo"]
    policy.save()
    status, reply = fake_feishu.click(
        url(second), client=wsgi, approval_id=str(approval.pk), operator_open_id="ou_cfo"
    )
    assert reply["toast"]["type"] == "error"
    approval.refresh_from_db()
    assert approval.status == "pending"

    admin = member_of(org, Role.ADMIN, username="ada")
    with django_capture_on_commit_callbacks(execute=True):
        outcome = approval_resend(approval=approval, actor=admin)
    assert outcome.resent
    approval.refresh_from_db()
    assert approval.channel_id == second.pk and approval.approver_open_ids == ["ou_cfo"]
    message = fake_feishu.message_for(str(approval.pk))
    assert message is not None
    status, reply = fake_feishu.click(
        url(second), client=wsgi, approval_id=str(approval.pk), operator_open_id="ou_cfo"
    )
    assert reply["toast"]["type"] == "success"


def test_a_decided_request_is_not_re_sent(world, org):
    _channel, _policy, approval = world
    ApprovalRequest.objects.unscoped().filter(pk=approval.pk).update(status="rejected")
    approval.refresh_from_db()
    outcome = approval_resend(approval=approval, actor=member_of(org, Role.ADMIN, username="ada"))
    assert not outcome.resent and not AuditLog.objects.filter(action="approval.resent").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"encrypt_key": "encrypt-key-2"},
        {"verification_token": "verification-token-2"},
        {"app_secret": "app-secret-2"},
        {"app_id": "cli_other"},
        {"base_url": "https://open.larksuite.com"},
    ],
)
def test_every_credential_change_bumps_the_channel_credentials_version(org, change):
    channel = FeishuChannelFactory(organization=org)
    version = channel.credentials_version
    channel.name = "renamed"
    channel.save()
    assert FeishuChannel.objects.unscoped().get(pk=channel.pk).credentials_version == version
    for name, value in change.items():
        setattr(channel, name, value)
    channel.save()
    assert FeishuChannel.objects.unscoped().get(pk=channel.pk).credentials_version > version


def test_a_stale_copy_saving_old_keys_back_still_bumps_the_version(org):
    channel = FeishuChannelFactory(organization=org)
    stale = FeishuChannel.objects.unscoped().get(pk=channel.pk)
    channel.encrypt_key = "encrypt-key-2"
    channel.save()
    bumped = FeishuChannel.objects.unscoped().get(pk=channel.pk).credentials_version
    stale.name = "renamed"
    stale.save()  # writes the old keys back
    assert FeishuChannel.objects.unscoped().get(pk=channel.pk).credentials_version > bumped


@pytest.mark.cross_org("approval-resend")
def test_another_organisations_request_cannot_be_re_sent(client_for, org, other_org):
    from tests.hooks.factories import ApprovalRequestFactory

    foreign = ApprovalRequestFactory(organization=other_org)
    client = client_for(member_of(org, Role.ADMIN, username="ada"))
    assert client.post(f"{base(org)}/approvals/{foreign.pk}/resend/").status_code == 404
    assert not AuditLog.objects.filter(action="approval.resent").exists()


def test_only_admins_re_send(client_for, org, approver, world):
    _channel, _policy, approval = world
    assert client_for(approver).post(f"{base(org)}/approvals/{approval.pk}/resend/").status_code == 403


def test_the_admin_re_sends_a_pending_request(
    client, org, world, fake_feishu, django_capture_on_commit_callbacks
):
    from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
    from django.urls import reverse

    from tests.factories import PASSWORD

    _channel, _policy, approval = world
    admin = member_of(org, Role.ADMIN, username="ada")
    assert client.login(username=admin.username, password=PASSWORD)
    sent_before = len(fake_feishu.sent)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reverse("admin:hooks_approvalrequest_changelist"),
            {"action": "resend", ACTION_CHECKBOX_NAME: [str(approval.pk)]},
        )
    assert response.status_code == 302
    assert len(fake_feishu.sent) == sent_before + 1
    assert fake_feishu.sent[-1].uuid == f"{approval.pk}-r1"
    assert AuditLog.objects.get(action="approval.resent").actor == admin
