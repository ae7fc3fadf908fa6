"""The budget warning's Feishu card (a Celery task, sent after the warning's commit)."""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

from asgiref.sync import async_to_sync
from celery import shared_task
from django.utils import translation
from django.utils.translation import gettext as _

from agents.usage.budgets import MICROS
from agents.usage.models import Budget, BudgetMetric
from hooks.delivery import feishu_app_for
from hooks.feishu.client import FeishuClient, guarded_http
from hooks.feishu.errors import FeishuError
from hooks.models import FeishuChannel

logger = logging.getLogger(__name__)


def warning_card(*, budget: Budget, used: int, language: str) -> dict[str, Any]:
    """The card: which budget, how much of it is used."""
    with translation.override(language):
        if budget.metric == BudgetMetric.COST:
            amount = f"{(Decimal(used) / MICROS).quantize(Decimal('0.01'))} / {budget.limit.normalize():f} {budget.currency}"
        else:
            amount = f"{used} / {int(budget.limit)}"
        title = _("Budget almost used up: %(name)s") % {"name": budget.name}
        text = _("%(scope)s budget, per %(period)s: %(amount)s used.") % {
            "scope": budget.get_scope_display(),
            "period": budget.get_period_display().lower(),
            "amount": amount,
        }
    return {
        "schema": "2.0",
        "config": {"update_multi": True},
        "header": {"title": {"tag": "plain_text", "content": title[:200]}, "template": "orange"},
        "body": {"elements": [{"tag": "div", "text": {"tag": "plain_text", "content": text}}]},
    }


async def _post(channel: FeishuChannel, card: dict[str, Any], uuid: str) -> str:
    app = feishu_app_for(channel)
    async with guarded_http(app) as http:
        return await FeishuClient(app, http=http).send_card(
            receive_id=channel.default_chat_id, receive_id_type=channel.receive_id_type, card=card, uuid=uuid
        )


@shared_task(acks_late=True)
def notify_budget_warning(*, budget_id: str, organization_id: int, period: str, used: int) -> bool:
    """Post the warning card to the organisation's first active Feishu channel with a default chat;
    ``False`` when there is none or Feishu refused (the audit entry is the record either way)."""
    budget = Budget.objects.for_org(organization_id).filter(pk=budget_id).first()
    channel = (
        FeishuChannel.objects.for_org(organization_id)
        .filter(is_active=True)
        .exclude(default_chat_id="")
        .order_by("created_at")
        .first()
    )
    if budget is None or channel is None:
        return False
    card = warning_card(budget=budget, used=used, language=channel.language)
    try:
        # Feishu's idempotency key: a retried task posts the card once.
        async_to_sync(_post)(channel, card, f"budget-{budget.pk.hex[:20]}-{period}")
    except FeishuError as exc:
        logger.warning("budget warning card not sent: %s", exc, extra={"org_id": organization_id})
        return False
    return True
