"""The budgets' admin page (registered by :mod:`agents.admin`), scoped to the admin's organisations."""

from __future__ import annotations

from django.contrib import admin

from agents.usage.models import BUDGET_SETTINGS, Budget
from platform_core.admin.base import AuditedAdmin


@admin.register(Budget)
class BudgetAdmin(AuditedAdmin):
    """Limits per organisation, user or agent; the choices of user and agent are the organisation's."""

    list_display = ["name", "organization", "scope", "user", "agent", "metric", "period", "limit", "active"]
    list_filter = ["scope", "metric", "period", "active"]
    search_fields = ["name"]
    fields = ["organization", *BUDGET_SETTINGS]
