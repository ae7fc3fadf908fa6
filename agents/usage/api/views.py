"""The organisation's budgets: admins write, members read (writes audited)."""

from __future__ import annotations

from rest_framework import permissions, viewsets

from agents.usage.api.serializers import BudgetSerializer
from agents.usage.models import Budget
from platform_core.api.audited import AuditedWritesMixin
from platform_core.tenancy.scoping import IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin


class BudgetViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """Limits on the organisation's model calls, per organisation, user or agent (tokens or cost, per day
    or month in a time zone). Checked before every model call of every run."""

    queryset = Budget.objects.select_related("user", "agent")
    serializer_class = BudgetSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]
