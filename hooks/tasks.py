"""Celery tasks of the approval machinery: send and update Feishu cards with retries, expire overdue
requests (beat)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from hooks.conf import card_send_max_retries
from hooks.delivery import (
    Attempt,
    card_send_attempt,
    card_send_gave_up,
    card_update_attempt,
    card_update_gave_up,
    retry_countdown,
)
from hooks.services import approval_card_mark_failed, approval_expire_overdue, feishu_event_receipts_prune

logger = logging.getLogger(__name__)


def on_card_due(*, approval_id: Any, change: str, **_: Any) -> None:
    """Receiver of ``hooks.signals.approval_card_due``: queue the card's delivery (a card that cannot be
    queued is marked failed; the request stays decidable in the web app)."""
    if change == "update":
        try:
            update_approval_card.delay(str(approval_id))
        except Exception:
            logger.exception("could not queue the card update of approval %s", approval_id)
        return
    try:
        send_approval_card.delay(str(approval_id))
    except Exception as exc:
        logger.exception("could not queue the card of approval %s", approval_id)
        approval_card_mark_failed(
            approval_id=approval_id, error=f"could not queue the card: {type(exc).__name__}"
        )


def _retry_or_give_up(task: Any, attempt: Attempt, *, approval_id: str, on_give_up: Any = None) -> None:
    retries = task.request.retries or 0
    if attempt.retry and retries < card_send_max_retries():
        countdown = retry_countdown(retries=retries, retry_after=attempt.retry_after)
        raise task.retry(countdown=countdown, max_retries=card_send_max_retries())
    logger.warning("approval %s: giving up on the card after %d attempts", approval_id, retries + 1)
    if on_give_up is not None:
        on_give_up(approval_id=approval_id, error=attempt.error)


@shared_task(bind=True, acks_late=True, max_retries=None)
def send_approval_card(self: Any, approval_id: str) -> None:
    """Send the pending card of an approval (the approval id is Feishu's idempotency ``uuid``)."""
    attempt = card_send_attempt(approval_id=approval_id)
    if attempt.done:
        if attempt.needs_update:
            update_approval_card.delay(approval_id)
        return
    _retry_or_give_up(self, attempt, approval_id=approval_id, on_give_up=card_send_gave_up)


@shared_task(bind=True, acks_late=True, max_retries=None)
def update_approval_card(self: Any, approval_id: str) -> None:
    """Replace an approval's card with its outcome (decided in the web app, expired or cancelled)."""
    attempt = card_update_attempt(approval_id=approval_id)
    if not attempt.done:
        _retry_or_give_up(self, attempt, approval_id=approval_id, on_give_up=card_update_gave_up)


@shared_task(acks_late=True)
def expire_overdue_approvals() -> int:
    """Expire every pending request past its deadline (their waiting runs wake; cards are updated)."""
    expired = approval_expire_overdue()
    feishu_event_receipts_prune()
    if expired:
        logger.info("expired %d overdue approval requests", expired)
    return expired
