"""Handling one Feishu card callback for a channel: the checks of FEISHU.md section 4 in order, then the
decision. Returns ``(http_status, json_body)``; every path has a toast body.

Order: body size (413), signature (401), decryption (400), URL verification (answered with the
challenge), verification token (403), timestamp within 5 minutes (408), replayed ``event_id`` (409,
recorded with a unique database row so every server process shares it), then: unknown approval, a
request sent on another channel or before the channel's credentials changed, operator not an approver,
separation of duties (error toasts, nothing changes), already decided (info toast and the final card),
decided (success toast and the new card, which replaces the card for everyone).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _

from hooks.delivery import decided_card_for
from hooks.feishu.callback import (
    CallbackRejected,
    CallbackSecrets,
    CardAction,
    UrlVerification,
    parse_callback,
    toast_reply,
    url_verification_reply,
)
from hooks.models import ApprovalRequest, ApprovalStatus, DecidedVia, FeishuChannel
from hooks.services import ApprovalForbidden, approval_decide, feishu_event_seen

logger = logging.getLogger(__name__)


class _ChannelEvents:
    """Replay store: one unique row per handled ``event_id``."""

    def __init__(self, channel: FeishuChannel, now: datetime) -> None:
        self.channel = channel
        self.now = now

    def add_if_absent(self, event_id: str) -> bool:
        return not feishu_event_seen(channel=self.channel, event_id=event_id, now=self.now)


def handle_feishu_callback(
    *, channel: FeishuChannel, raw_body: bytes, headers: Mapping[str, str], now: datetime
) -> tuple[int, dict[str, Any]]:
    """Check and answer one callback request of ``channel``."""
    try:
        parsed = parse_callback(
            raw_body=raw_body,
            headers=headers,
            secrets=CallbackSecrets(
                verification_token=channel.verification_token,
                encrypt_key=channel.encrypt_key,
                app_id=channel.app_id or None,
            ),
            now=now,
            seen_events=_ChannelEvents(channel, now),
            language=channel.language,
        )
    except CallbackRejected as rejected:
        logger.warning("Feishu callback for channel %s refused: %s", channel.pk, rejected.reason)
        return rejected.http_status, rejected.reply()
    if isinstance(parsed, UrlVerification):
        return 200, url_verification_reply(parsed)
    return 200, _decide(channel, parsed)


def _approval_for(channel: FeishuChannel, value: Mapping[str, Any]) -> ApprovalRequest | None:
    try:
        approval_id = uuid.UUID(str(value.get("approval_id", "")))
    except ValueError:
        return None
    return (
        ApprovalRequest.objects.select_related("requested_by", "decided_by")
        .filter(pk=approval_id, organization_id=channel.organization_id)
        .first()
    )


def _decide(channel: FeishuChannel, action: CardAction) -> dict[str, Any]:
    approval = _approval_for(channel, action.value)
    if approval is None:
        return toast_reply("error", _("This approval request does not exist."))
    decision = action.value.get("decision")
    if decision not in ("approve", "reject"):
        return toast_reply("error", _("This button does not carry a decision."))
    try:
        result = approval_decide(
            approval=approval,
            decision=decision,
            via=DecidedVia.FEISHU,
            operator_open_id=action.operator_open_id,
            channel=channel,
        )
    except ApprovalForbidden as refused:
        logger.info(
            "Feishu click on approval %s refused (%s) on channel %s",
            approval.pk,
            refused.reason,
            channel.pk,
            extra={"org_id": channel.organization_id},
        )
        return toast_reply("error", refused.message)
    final = result.approval
    card = decided_card_for(final, channel.language)
    if not result.changed:
        text = _("This request was already %(status)s.") % {"status": final.get_status_display().lower()}
        return toast_reply("info", text, card)
    text = _("Approved.") if final.status == ApprovalStatus.APPROVED else _("Rejected.")
    return toast_reply("success", text, card)
