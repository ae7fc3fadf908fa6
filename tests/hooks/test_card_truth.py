"""The Feishu card of an approval request is sent wherever a channel and a chat are known, even when the
policy lists no Feishu approvers, and its state shown in the inbox is always the true one: not sent and
why, queued, sent, failed with the error, updated with the outcome (or the update failed and why).

Cards go to the fake Feishu server; Celery tasks run eagerly (see conftest)."""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from hooks.models import ApprovalRequest
from hooks.services import approval_decide, approval_request_create
from platform_core.models import Role
from tests.factories import PASSWORD, ConnectorActionFactory, member_of
from tests.hooks.factories import ApprovalPolicyFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(org):
    return member_of(org, Role.OWNER, username="olga")


def _policy(org, *, channel=None, chat_id="", open_ids=()):
    return ApprovalPolicyFactory(
        organization=org, channel=channel, chat_id=chat_id, approver_open_ids=list(open_ids)
    )


def _ask(org, policy, capture) -> ApprovalRequest:
    with capture(execute=True):
        approval = approval_request_create(
            organization_id=org.pk,
            policy=policy,
            tool_name="erp__create_payment",
            arguments={"amount": 60000},
        )
    approval.refresh_from_db()
    return approval


def _detail_text(client, user, approval) -> str:
    assert client.login(username=user.username, password=PASSWORD)
    url = reverse(
        "approvals-inbox-detail", kwargs={"org_slug": approval.organization.slug, "approval_id": approval.pk}
    )
    return client.get(url).content.decode()


def test_a_policy_with_a_channel_and_a_chat_but_no_feishu_approvers_sends_its_card_to_the_chat(
    org, fake_feishu, owner, client, django_capture_on_commit_callbacks
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url, default_chat_id="")
    approval = _ask(org, _policy(org, channel=channel, chat_id="oc_team"), django_capture_on_commit_callbacks)

    assert [m.chat_id for m in fake_feishu.sent] == ["oc_team"]
    assert approval.card_status == "sent" and approval.feishu_message_id
    card = str(fake_feishu.sent[0].card)
    # nobody can decide by clicking, so the card has no buttons and says where to decide
    assert "column_set" not in card and "approvals inbox" in card
    page = _detail_text(client, owner, approval)
    assert "No Feishu channel" not in page and "Sent" in page


def test_a_web_decision_updates_that_card_and_the_page_says_updated(
    org, fake_feishu, owner, client, django_capture_on_commit_callbacks
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    approval = _ask(org, _policy(org, channel=channel), django_capture_on_commit_callbacks)
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(approval=approval, decision="approve", via="web", actor=owner)
    approval.refresh_from_db()

    assert [u.message_id for u in fake_feishu.updates] == [approval.feishu_message_id]
    assert approval.card_status == "updated"
    page = _detail_text(client, owner, approval)
    assert "No Feishu channel" not in page and "Updated with the outcome" in page


def test_a_failed_update_is_shown_with_its_error(
    org, fake_feishu, owner, client, django_capture_on_commit_callbacks, settings
):
    settings.APPROVAL_CARD_MAX_RETRIES = 0
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    approval = _ask(org, _policy(org, channel=channel), django_capture_on_commit_callbacks)
    fake_feishu.fail_with(230099, msg="the card cannot be updated", times=10)
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(approval=approval, decision="reject", via="web", actor=owner)
    approval.refresh_from_db()

    assert approval.card_status == "update_failed"
    assert "the card cannot be updated" in approval.card_error
    page = _detail_text(client, owner, approval)
    assert "the card cannot be updated" in page


def test_a_failed_send_is_shown_with_its_error(
    org, fake_feishu, owner, client, django_capture_on_commit_callbacks
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    fake_feishu.remove_bot_from_chat("oc_approvals")
    approval = _ask(org, _policy(org, channel=channel), django_capture_on_commit_callbacks)

    assert approval.card_status == "failed" and approval.card_error
    assert html.escape(approval.card_error) in _detail_text(client, owner, approval)


@pytest.mark.parametrize(
    ("setup", "status", "shown"),
    [
        pytest.param("no_channel", "none", "the policy names no active Feishu channel", id="none"),
        pytest.param("inactive", "none", "the policy names no active Feishu channel", id="inactive"),
        pytest.param("no_chat", "no_chat", "no chat to send it to", id="no-chat"),
    ],
)
def test_a_card_that_cannot_be_sent_says_why_and_stays_so_after_a_decision(
    org, fake_feishu, owner, client, django_capture_on_commit_callbacks, setup, status, shown
):
    channel = None
    if setup != "no_channel":
        channel = FeishuChannelFactory(
            organization=org,
            base_url=fake_feishu.base_url,
            default_chat_id="",
            is_active=setup != "inactive",
        )
    approval = _ask(org, _policy(org, channel=channel), django_capture_on_commit_callbacks)
    assert approval.card_status == status and fake_feishu.sent == []
    assert shown in _detail_text(client, owner, approval)

    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(approval=approval, decision="approve", via="web", actor=owner)
    approval.refresh_from_db()
    assert approval.card_status == status and fake_feishu.updates == []
    page = _detail_text(client, owner, approval)
    assert shown in page and "Card error" not in page


def test_a_request_decided_before_its_card_went_out_says_so(org, fake_feishu, owner, client):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    # no on-commit callbacks run: the card stays queued until the task below
    approval = approval_request_create(
        organization_id=org.pk, policy=_policy(org, channel=channel), tool_name="t", arguments={}
    )
    assert approval.card_status == "queued"
    assert "Queued" in _detail_text(client, owner, approval)
    approval_decide(approval=approval, decision="reject", via="web", actor=owner)
    from hooks.tasks import send_approval_card

    send_approval_card.delay(str(approval.pk))
    approval.refresh_from_db()
    assert approval.card_status == "skipped" and fake_feishu.sent == []
    assert "decided before the card went out" in _detail_text(client, owner, approval)


def test_the_admin_saves_a_policy_with_a_chat_and_no_feishu_approvers_and_its_cards_go_out(
    org, fake_feishu, owner, client, django_capture_on_commit_callbacks
):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url, default_chat_id="")
    action = ConnectorActionFactory(connector__organization=org)
    assert client.login(username=owner.username, password=PASSWORD)
    response = client.post(
        reverse("admin:hooks_approvalpolicy_add"),
        {
            "organization": org.pk,
            "name": "Large payments",
            "actions": [action.pk],
            "writes_only": "on",
            "channel": channel.pk,
            "chat_id": "oc_finance",
            "approver_open_ids_text": "",
            "timeout_seconds": 600,
            "is_active": "on",
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    from hooks.models import ApprovalPolicy

    policy = ApprovalPolicy.objects.unscoped().get(name="Large payments")
    approval = _ask(org, policy, django_capture_on_commit_callbacks)
    assert approval.card_status == "sent"
    assert [m.chat_id for m in fake_feishu.sent] == ["oc_finance"]
