"""Soft limits: when a budget's use crosses its warning threshold, the organisation's admins are warned
once per period, by an audit entry and, when the organisation has an active Feishu channel with a
default chat, a card posted there (by a Celery task after the commit: never on a model call's path)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from agents.usage.budgets import BudgetLine
from agents.usage.models import Budget
from platform_core.models import Organization
from platform_core.services import audit_log_write

WARNING_ACTION = "budget.warning"


def budget_warn(*, line: BudgetLine, period: str, used: int) -> bool:
    """Warn about ``line`` for ``period`` unless that was done already (sync; returns whether it warned).

    The budget's ``warned_period`` is set with a conditional UPDATE, so of several processes crossing the
    threshold at once exactly one writes the entry.
    """
    with transaction.atomic():
        claimed = (
            Budget.objects.filter(pk=line.id, organization_id=line.organization_id)
            .exclude(warned_period=period)
            .update(warned_period=period)
        )
        if not claimed:
            return False
        budget = Budget.objects.for_org(line.organization_id).get(pk=line.id)
        audit_log_write(
            organization=Organization.objects.get(pk=line.organization_id),
            actor=None,
            action=WARNING_ACTION,
            target=budget,
            after={
                "period": period,
                "used": used,
                "limit": line.limit,
                "metric": line.metric,
                "warn_percent": line.warn_percent,
            },
        )
        from agents.usage.tasks import notify_budget_warning

        budget_id, organization_id = str(line.id), line.organization_id
        transaction.on_commit(
            lambda: notify_budget_warning.delay(
                budget_id=budget_id, organization_id=organization_id, period=period, used=used
            )
        )
    return True


@dataclass(frozen=True, slots=True)
class BudgetWarning:
    """The run write of a budget warning (:func:`budget_warn`), made in the transaction of the run's next
    event batch: off the model call's path."""

    line: BudgetLine
    period: str
    used: int

    def apply(self) -> bool:
        return budget_warn(line=self.line, period=self.period, used=self.used)
