"""Card delivery by the Celery tasks against the fake Feishu: sent once, retried with backoff honouring
Feishu's rate-limit hint, given up visibly when Feishu stays down (the request stays decidable in the web
app), replaced after decisions and expiry. Tasks run eagerly (see conftest)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from celery.signals import task_retry
from django.utils import timezone

from hooks.delivery import card_send_attempt, retry_countdown
from hooks.models import ApprovalRequest
from hooks.services import approval_decide
from hooks.tasks import expire_overdue_approvals, send_approval_card, update_approval_card
from platform_core.models import AuditLog, Role
from tests.factories import member_of
from tests.hooks.factories import ApprovalRequestFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def approval(org, fake_feishu):
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    return ApprovalRequestFactory(
        organization=org, channel=channel, chat_id="oc_approvals", card_status="queued"
    )


@pytest.fixture
def retries():
    seen: list[float] = []

    def record(sender=None, request=None, reason=None, **kwargs):
        seen.append(reason.when)

    task_retry.connect(record)
    try:
        yield seen
    finally:
        task_retry.disconnect(record)


def test_the_card_goes_to_the_policy_chat_once_with_the_approval_id_as_uuid(fake_feishu, approval):
    send_approval_card.delay(str(approval.pk))
    send_approval_card.delay(str(approval.pk))  # a redelivered task
    assert len(fake_feishu.sent) == 1
    message = fake_feishu.sent[0]
    assert message.uuid == str(approval.pk) and message.chat_id == "oc_approvals"
    approval.refresh_from_db()
    assert approval.card_status == "sent" and approval.feishu_message_id == message.message_id
    card = message.card
    assert "erp__create_payment" in card["header"]["title"]["content"]
    assert '"amount": 60000' in str(card)


def test_a_failed_send_is_retried_with_the_same_uuid_and_posts_one_message(fake_feishu, approval, retries):
    fake_feishu.fail(times=2)
    send_approval_card.delay(str(approval.pk))
    assert len(retries) == 2
    assert len(fake_feishu.sent) == 1
    approval.refresh_from_db()
    assert approval.card_status == "sent"


def test_a_rate_limited_send_waits_as_long_as_feishu_says_before_retrying(fake_feishu, approval, retries):
    fake_feishu.rate_limit(times=1, reset=7)
    send_approval_card.delay(str(approval.pk))
    assert retries == [7.0]
    assert len(fake_feishu.sent) == 1


def test_retry_countdown_backs_off_exponentially_and_never_undercuts_feishus_hint():
    assert [retry_countdown(retries=n, retry_after=None, base=2) for n in range(4)] == [2, 4, 8, 16]
    assert retry_countdown(retries=5, retry_after=None, base=2) == 64
    assert retry_countdown(retries=20, retry_after=None, base=2) == 300  # capped
    assert retry_countdown(retries=0, retry_after=9, base=2) == 9


def test_when_feishu_stays_down_the_card_is_marked_failed_and_the_web_app_can_still_decide(
    fake_feishu, approval, org, client_for
):
    fake_feishu.fail(times=50)
    send_approval_card.delay(str(approval.pk))
    approval.refresh_from_db()
    assert approval.card_status == "failed" and approval.card_error
    assert approval.status == "pending" and fake_feishu.sent == []

    admin = member_of(org, Role.ADMIN, username="ada")
    response = client_for(admin).post(
        f"/api/v1/orgs/{org.slug}/approvals/{approval.pk}/decide/", {"decision": "approve"}, format="json"
    )
    assert response.status_code == 200 and response.json()["status"] == "approved"


def test_an_error_that_retrying_cannot_fix_fails_at_once_with_a_clear_reason(fake_feishu, approval, retries):
    fake_feishu.remove_bot_from_chat("oc_approvals")
    send_approval_card.delay(str(approval.pk))
    approval.refresh_from_db()
    assert retries == []
    assert approval.card_status == "failed" and "230002" in approval.card_error
    assert "bot" in approval.card_error


def test_a_request_decided_before_its_card_was_sent_sends_no_card(fake_feishu, approval):
    ApprovalRequest.objects.unscoped().filter(pk=approval.pk).update(status="approved")
    assert card_send_attempt(approval_id=approval.pk).done
    assert fake_feishu.sent == []


def test_a_web_decision_replaces_the_card_by_patch_with_retries(
    fake_feishu, approval, org, django_capture_on_commit_callbacks, retries
):
    send_approval_card.delay(str(approval.pk))
    approval.refresh_from_db()
    admin = member_of(org, Role.ADMIN, username="ada")
    fake_feishu.rate_limit(times=1, reset=2)
    with django_capture_on_commit_callbacks(execute=True):
        approval_decide(approval=approval, decision="reject", via="web", actor=admin, comment="no budget")
    assert retries == [2.0]
    card = fake_feishu.messages[approval.feishu_message_id].card
    assert "Rejected" in card["header"]["title"]["content"] and "no budget" in str(card)
    assert [u.kind for u in fake_feishu.updates] == ["patch"]


def test_the_beat_task_expires_overdue_requests_and_updates_their_cards(
    fake_feishu, approval, org, django_capture_on_commit_callbacks
):
    send_approval_card.delay(str(approval.pk))
    approval.refresh_from_db()
    fresh = ApprovalRequestFactory(organization=org)
    ApprovalRequest.objects.unscoped().filter(pk=approval.pk).update(
        expires_at=timezone.now() - timedelta(seconds=5)
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert expire_overdue_approvals() == 1
    approval.refresh_from_db()
    fresh.refresh_from_db()
    assert approval.status == "expired" and fresh.status == "pending"
    card = fake_feishu.messages[approval.feishu_message_id].card
    assert "Expired" in card["header"]["title"]["content"]
    assert AuditLog.objects.filter(action="approval.expired", target_id=str(approval.pk)).count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        assert expire_overdue_approvals() == 0  # nothing twice


def test_updating_the_card_of_a_pending_request_does_nothing(fake_feishu, approval):
    send_approval_card.delay(str(approval.pk))
    update_approval_card.delay(str(approval.pk))
    assert fake_feishu.updates == []
