"""Delivering approval cards to Feishu: one attempt at a time, for the Celery tasks to retry.

Each function makes one attempt and returns an :class:`Attempt` telling the task whether to retry and
after how long (Feishu's ``x-ogw-ratelimit-reset`` when it gave one, else exponential backoff). A card
is sent with the approval id as Feishu's ``uuid`` (plus the re-send number after a re-send, which is a new
message), so a retried send never posts twice.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from django.utils import translation

from hooks import addressed
from hooks.approvers import approval_feishu_open_ids, approver_names, person_name
from hooks.conf import card_retry_base_seconds
from hooks.feishu.cards import approval_decided_card, approval_pending_card, channel_test_card, decision_of
from hooks.feishu.client import FeishuApp, FeishuClient, guarded_http
from hooks.feishu.errors import FeishuError
from hooks.feishu_guard import feishu_allowed_private_hosts
from hooks.models import ApprovalRequest, ApprovalStatus, CardStatus, FeishuChannel
from hooks.services import (
    approval_card_mark_failed,
    approval_card_mark_sent,
    approval_card_mark_skipped,
    approval_card_mark_update_failed,
    approval_card_mark_updated,
)

logger = logging.getLogger(__name__)

MAX_BACKOFF_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class Attempt:
    """The result of one delivery attempt."""

    done: bool
    retry: bool = False
    retry_after: float | None = None
    error: str = ""
    needs_update: bool = False


def retry_countdown(*, retries: int, retry_after: float | None, base: float | None = None) -> float:
    """Seconds before the next attempt: Feishu's hint when given (never less), else base * 2**retries."""
    base = card_retry_base_seconds() if base is None else base
    backoff = min(MAX_BACKOFF_SECONDS, base * (2**retries))
    if retry_after is not None and retry_after > 0:
        return float(min(MAX_BACKOFF_SECONDS, max(retry_after, 0.5)))
    return backoff


def feishu_app_for(channel: FeishuChannel) -> FeishuApp:
    """The channel's app; its requests go through the SSRF guard with the operator's allowance for its
    base URL (the operator's own host only on the operator's own origin)."""
    base_url = channel.effective_base_url
    return FeishuApp(
        app_id=channel.app_id,
        app_secret=channel.app_secret,
        base_url=base_url,
        allowed_private_hosts=feishu_allowed_private_hosts(base_url),
    )


def _held_because(approval: ApprovalRequest, language: str) -> str:
    with translation.override(language):
        return approval.held_because()


def _request_facts(approval: ApprovalRequest) -> dict[str, Any]:
    """What every card of a request says of it: the agent, who asked, the tool, its arguments, the policy."""
    return {
        "agent_name": approval.agent_name,
        "user_name": person_name(approval.requested_by) if approval.requested_by is not None else "",
        "tool_name": approval.tool_name,
        "arguments": approval.arguments,
        "policy_name": approval.policy_name,
    }


def pending_card_for(approval: ApprovalRequest, language: str) -> dict[str, Any]:
    """The pending card, naming its approvers. Without Feishu approvers (no approver with a linked Feishu
    account, no raw ``open_id``) nobody can decide by clicking, so it has no buttons and says to decide
    in the approvals inbox."""
    with translation.override(language):
        approvers = approver_names(approval)
    return approval_pending_card(
        approval_id=str(approval.pk),
        **_request_facts(approval),
        expires_at=approval.expires_at,
        reason=_held_because(approval, language),
        approvers=approvers,
        clickable=bool(approval_feishu_open_ids(approval)),
        language=language,
    )


def decided_card_for(approval: ApprovalRequest, language: str) -> dict[str, Any]:
    """The card of a request that is no longer pending (``ValueError`` for a pending one)."""
    return approval_decided_card(
        decision=decision_of(approval.status),
        **_request_facts(approval),
        decided_by=approval.decider_label() or None,
        comment=approval.comment or None,
        decided_at=approval.decided_at,
        language=language,
    )


def _load(approval_id: Any) -> ApprovalRequest | None:
    return (
        addressed.approvals()
        .select_related("channel", "requested_by", "decided_by")
        .filter(pk=approval_id)
        .first()
    )


async def _send(app: FeishuApp, *, receive_id: str, receive_id_type: str, card: dict, uuid: str) -> str:
    async with guarded_http(app) as http:
        return await FeishuClient(app, http=http).send_card(
            receive_id=receive_id, receive_id_type=receive_id_type, card=card, uuid=uuid
        )


async def _update(app: FeishuApp, *, message_id: str, card: dict) -> None:
    async with guarded_http(app) as http:
        await FeishuClient(app, http=http).update_card(message_id=message_id, card=card)


def _failed(exc: FeishuError) -> Attempt:
    return Attempt(done=False, retry=exc.retryable, retry_after=exc.retry_after, error=str(exc)[:500])


def card_send_attempt(*, approval_id: Any) -> Attempt:
    """Send the pending card of an approval once (if it still has to be sent)."""
    approval = _load(approval_id)
    delivered = (CardStatus.SENT, CardStatus.UPDATED, CardStatus.UPDATE_FAILED)
    if approval is None or approval.channel is None or approval.card_status in delivered:
        return Attempt(done=True)
    if approval.status != ApprovalStatus.PENDING:
        approval_card_mark_skipped(approval_id=approval.pk)
        return Attempt(done=True)
    channel = approval.channel
    try:
        message_id = async_to_sync(_send)(
            feishu_app_for(channel),
            receive_id=approval.chat_id,
            receive_id_type=channel.receive_id_type,
            card=pending_card_for(approval, channel.language),
            uuid=approval.card_uuid,
        )
    except FeishuError as exc:
        logger.warning("approval %s: sending the card failed (%s)", approval.pk, exc)
        return _failed(exc)
    except ValueError as exc:  # the card is too large or otherwise refused before sending
        return Attempt(done=False, retry=False, error=str(exc)[:500])
    approval_card_mark_sent(approval_id=approval.pk, message_id=message_id)
    # Decided while the card was on its way: its update found no message id, so update it now.
    if addressed.approvals().filter(pk=approval.pk).exclude(status=ApprovalStatus.PENDING).exists():
        return Attempt(done=True, needs_update=True)
    return Attempt(done=True)


def card_update_attempt(*, approval_id: Any) -> Attempt:
    """Replace the card of a decided, expired or cancelled approval with its outcome, once."""
    approval = _load(approval_id)
    if (
        approval is None
        or approval.channel is None
        or not approval.feishu_message_id
        or approval.status == ApprovalStatus.PENDING
    ):
        return Attempt(done=True)
    channel = approval.channel
    try:
        async_to_sync(_update)(
            feishu_app_for(channel),
            message_id=approval.feishu_message_id,
            card=decided_card_for(approval, channel.language),
        )
    except FeishuError as exc:
        logger.warning("approval %s: updating the card failed (%s)", approval.pk, exc)
        return _failed(exc)
    except ValueError as exc:  # the card is too large or otherwise refused before sending
        return Attempt(done=False, retry=False, error=str(exc)[:500])
    approval_card_mark_updated(approval_id=approval.pk)
    return Attempt(done=True)


def card_send_gave_up(*, approval_id: Any, error: str) -> None:
    """Record that the card could not be sent; the request stays decidable in the web app."""
    approval_card_mark_failed(approval_id=approval_id, error=error or "the card could not be sent")


def card_update_gave_up(*, approval_id: Any, error: str) -> None:
    """Record that the card could not be updated with the outcome (it still shows the buttons)."""
    approval_card_mark_update_failed(approval_id=approval_id, error=error or "the card could not be updated")


def channel_send_test_card(*, channel: FeishuChannel) -> str:
    """Post a test card to the channel's default chat; returns the message id (raises FeishuError)."""
    if not channel.default_chat_id:
        raise FeishuError("the channel has no default chat", retryable=False)
    return async_to_sync(_send)(
        feishu_app_for(channel),
        receive_id=channel.default_chat_id,
        receive_id_type=channel.receive_id_type,
        card=channel_test_card(channel_name=channel.name, language=channel.language),
        uuid=f"test-{channel.pk.hex[:20]}-{secrets.token_hex(6)}",
    )
