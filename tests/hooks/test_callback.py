"""The Feishu card callback view: every check of FEISHU.md section 4, in order, each answered with a toast
within Feishu's deadline, and only the request's approvers can decide, exactly once."""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from hooks.delivery import card_send_attempt
from hooks.feishu.callback import sign
from hooks.models import ApprovalRequest, FeishuEventReceipt
from platform_core.models import AuditLog
from tests.factories import OrganizationFactory
from tests.fakes.feishu_server import FAKE_ENCRYPT_KEY
from tests.hooks.factories import ApprovalRequestFactory, FeishuChannelFactory

pytestmark = pytest.mark.django_db

BOSS = "ou_boss"


@pytest.fixture
def carded(org, fake_feishu):
    """A pending request whose card was sent to the fake Feishu."""
    channel = FeishuChannelFactory(organization=org, base_url=fake_feishu.base_url)
    approval = ApprovalRequestFactory(
        organization=org, channel=channel, chat_id="oc_approvals", approver_open_ids=[BOSS]
    )
    assert card_send_attempt(approval_id=approval.pk).done
    approval.refresh_from_db()
    return channel, approval


def url(channel) -> str:
    return f"http://testserver/integrations/feishu/{channel.pk}/callback/"


def click(fake_feishu, wsgi, channel, approval, **knobs):
    knobs.setdefault("operator_open_id", BOSS)
    knobs.setdefault("decision", "approve")
    return fake_feishu.click(url(channel), client=wsgi, approval_id=str(approval.pk), **knobs)


def decisions() -> list[str]:
    return list(AuditLog.objects.filter(action__startswith="approval.").values_list("action", flat=True))


def test_an_approver_click_approves_and_answers_with_the_final_card(fake_feishu, wsgi, carded):
    channel, approval = carded
    status, reply = click(fake_feishu, wsgi, channel, approval)
    assert status == 200 and reply["toast"] == {"type": "success", "content": "Approved."}
    approval.refresh_from_db()
    assert approval.status == "approved" and approval.decided_by_open_id == BOSS
    assert approval.decided_via == "feishu" and approval.decided_at is not None
    card = fake_feishu.messages[approval.feishu_message_id].card
    assert "Approved" in card["header"]["title"]["content"] and "button" not in str(card)
    assert decisions() == ["approval.approved"]


@pytest.mark.parametrize(
    ("knob", "http_status"),
    [("bad_signature", 401), ("unsigned", 401), ("wrong_token", 403), ("stale", 408)],
)
def test_a_forged_or_stale_click_is_refused_with_an_error_toast_and_changes_nothing(
    fake_feishu, wsgi, carded, knob, http_status
):
    channel, approval = carded
    status, reply = click(fake_feishu, wsgi, channel, approval, **{knob: True})
    assert status == http_status
    assert reply["toast"]["type"] == "error" and "card" not in reply
    approval.refresh_from_db()
    assert approval.status == "pending" and decisions() == []
    assert not FeishuEventReceipt.objects.exists()  # only fully checked events are recorded


def test_a_signed_body_that_does_not_decrypt_is_refused_with_400_and_a_toast(wsgi, carded):
    channel, approval = carded
    body = b'{"encrypt": "bm90IGVuY3J5cHRlZCBhdCBhbGwgLSBqdXN0IHRleHQ="}'
    timestamp, nonce = str(int(time.time())), "n-1"
    headers = {
        "X-Lark-Request-Timestamp": timestamp,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": sign(
            timestamp=timestamp, nonce=nonce, encrypt_key=FAKE_ENCRYPT_KEY, raw_body=body
        ),
    }
    response = wsgi.post(url(channel), content=body, headers=headers)
    assert response.status_code == 400 and response.json()["toast"]["type"] == "error"
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_replayed_event_is_refused_and_decides_nothing_twice(fake_feishu, wsgi, carded):
    channel, approval = carded
    assert click(fake_feishu, wsgi, channel, approval)[0] == 200
    status, reply = click(fake_feishu, wsgi, channel, approval, replay=True)
    assert status == 409 and reply["toast"]["type"] == "error"
    assert decisions() == ["approval.approved"]


def test_an_unknown_approval_gets_an_error_toast(fake_feishu, wsgi, carded):
    channel, _approval = carded
    status, reply = fake_feishu.click(
        url(channel),
        client=wsgi,
        operator_open_id=BOSS,
        value={"approval_id": str(uuid.uuid4()), "decision": "approve"},
    )
    assert status == 200 and reply["toast"] == {
        "type": "error",
        "content": "This approval request does not exist.",
    }


def test_another_organisations_approval_is_unknown_to_this_channel(fake_feishu, wsgi, carded, other_org):
    _channel, approval = carded
    foreign_channel = FeishuChannelFactory(organization=other_org, base_url=fake_feishu.base_url)
    status, reply = click(fake_feishu, wsgi, foreign_channel, approval)
    assert status == 200 and reply["toast"]["type"] == "error"
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_a_click_by_someone_who_is_not_an_approver_changes_nothing(fake_feishu, wsgi, carded):
    channel, approval = carded
    status, reply = click(fake_feishu, wsgi, channel, approval, operator_open_id="ou_intern")
    assert status == 200 and reply["toast"]["type"] == "error" and "card" not in reply
    approval.refresh_from_db()
    assert approval.status == "pending" and decisions() == []
    card = fake_feishu.messages[approval.feishu_message_id].card
    assert "button" in str(card)  # the buttons are still there for the real approver


def test_a_double_click_decides_exactly_once_and_the_second_sees_the_outcome(fake_feishu, wsgi, carded):
    channel, approval = carded
    first = click(fake_feishu, wsgi, channel, approval, decision="approve")
    second = click(fake_feishu, wsgi, channel, approval, decision="reject")
    assert first[1]["toast"]["type"] == "success"
    assert second[0] == 200 and second[1]["toast"] == {
        "type": "info",
        "content": "This request was already approved.",
    }
    assert "Approved" in second[1]["card"]["data"]["header"]["title"]["content"]
    approval.refresh_from_db()
    assert approval.status == "approved" and decisions() == ["approval.approved"]


def test_a_click_after_the_deadline_expires_the_request_instead(fake_feishu, wsgi, carded):
    channel, approval = carded
    ApprovalRequest.objects.unscoped().filter(pk=approval.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    status, reply = click(fake_feishu, wsgi, channel, approval)
    assert status == 200 and reply["toast"]["content"] == "This request was already expired."
    approval.refresh_from_db()
    assert approval.status == "expired" and decisions() == ["approval.expired"]


def test_url_verification_echoes_the_challenge_and_checks_the_token(fake_feishu, wsgi, carded):
    channel, _approval = carded
    status, reply = fake_feishu.verify_url(url(channel), client=wsgi, challenge="c-123")
    assert status == 200 and reply == {"challenge": "c-123"}
    status, reply = fake_feishu.verify_url(url(channel), client=wsgi, wrong_token=True)
    assert status == 403 and reply["toast"]["type"] == "error"


def test_an_unknown_or_inactive_channel_answers_404_with_a_toast(fake_feishu, wsgi, carded):
    channel, approval = carded
    channel.is_active = False
    channel.save()
    status, reply = click(fake_feishu, wsgi, channel, approval)
    assert status == 404 and reply["toast"]["type"] == "error"
    response = wsgi.post(f"/integrations/feishu/{uuid.uuid4()}/callback/", content=b"{}")
    assert response.status_code == 404 and response.json()["toast"]["type"] == "error"


def test_the_callback_needs_no_session_or_csrf_token_and_only_accepts_post(wsgi, carded):
    channel, _approval = carded
    assert wsgi.get(url(channel)).status_code == 405


def test_toasts_follow_the_channel_language(fake_feishu, wsgi, carded):
    channel, approval = carded
    channel.language = "zh-hans"
    channel.save()
    status, reply = click(fake_feishu, wsgi, channel, approval, operator_open_id="ou_intern")
    assert status == 200 and reply["toast"]["content"] == "您不是此请求的审批人，未做任何更改。"


def test_a_channel_of_another_org_cannot_be_used_to_decide_even_by_a_listed_operator(
    fake_feishu, wsgi, carded
):
    # the same open_id listed in another organisation gives no power over this one
    channel, approval = carded
    other = OrganizationFactory(slug="initech")
    other_approval = ApprovalRequestFactory(organization=other, approver_open_ids=[BOSS])
    status, reply = fake_feishu.click(
        url(channel),
        client=wsgi,
        operator_open_id=BOSS,
        value={"approval_id": str(other_approval.pk), "decision": "approve"},
    )
    assert reply["toast"]["type"] == "error"
    other_approval.refresh_from_db()
    assert other_approval.status == "pending"
