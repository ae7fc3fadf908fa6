"""The figures of the admin's home page: for each organisation an admin administers, what needs them.

One :class:`OrgCard` per organisation: its pending approvals, its read-only switch, the budgets at or
above their warning level and the connectors that are failing. It reads the apps' models and selectors,
so it lives in the project wiring, which sits above every app (see the import-linter layers). The
caller passes the organisations, already scoped (``platform_core.tenancy.admin_orgs.admin_orgs``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.urls import reverse
from django.utils import timezone

from agents.usage.models import Budget
from agents.usage_dashboard.selectors import budget_consumption
from connectors.circuit import open_breakers
from connectors.models import CallStatus, Connector, ConnectorCallLog
from hooks.models import ApprovalRequest, ApprovalStatus
from platform_core.models import Organization

# A connector whose latest call in this window failed counts as failing.
RECENT_CALLS = timedelta(hours=24)
# A budget without a warning level is reported once it reaches its limit.
DEFAULT_WARN_PERCENT = 100
# Cards on one page (a superuser administers every organisation); the rest are counted.
MAX_CARDS = 12


@dataclass(frozen=True, slots=True)
class ApprovalsFigure:
    """The organisation's requests waiting for a decision, and the inbox that lists them."""

    pending: int
    oldest_at: datetime | None
    url: str


@dataclass(frozen=True, slots=True)
class ReadOnlyFigure:
    """The organisation's read-only switch; ``url`` is its admin page, where it is switched."""

    on: bool
    reason: str
    changed_at: datetime | None
    url: str


@dataclass(frozen=True, slots=True)
class BudgetAlert:
    """A budget whose current period has used ``warn_percent`` or more of its limit."""

    name: str
    used: Decimal
    limit: Decimal
    currency: str
    percent: float | None
    exceeded: bool
    url: str


@dataclass(frozen=True, slots=True)
class ConnectorAlert:
    """A connector whose latest recent call failed, or whose circuit is open in this process."""

    name: str
    last_error_at: datetime | None
    errors: int
    circuit_open: bool
    url: str


@dataclass(frozen=True, slots=True)
class OrgCard:
    """Everything the admin's home page shows of one organisation."""

    organization: Organization
    approvals: ApprovalsFigure
    read_only: ReadOnlyFigure
    budgets: list[BudgetAlert]
    connectors: list[ConnectorAlert]

    @property
    def needs_attention(self) -> bool:
        return bool(self.approvals.pending or self.read_only.on or self.budgets or self.connectors)


def approvals_figure(*, organization: Organization) -> ApprovalsFigure:
    """How many requests of the organisation are pending and since when (one query)."""
    summary = (
        ApprovalRequest.objects.for_org(organization)
        .filter(status=ApprovalStatus.PENDING)
        .aggregate(pending=Count("pk"), oldest_at=Min("created_at"))
    )
    return ApprovalsFigure(
        pending=summary["pending"],
        oldest_at=summary["oldest_at"],
        url=reverse("approvals-inbox", kwargs={"org_slug": organization.slug}),
    )


def read_only_figure(*, organization: Organization) -> ReadOnlyFigure:
    return ReadOnlyFigure(
        on=organization.read_only,
        reason=organization.read_only_reason,
        changed_at=organization.read_only_changed_at,
        url=reverse("admin:platform_core_organization_change", args=[organization.pk]),
    )


def budget_alerts(*, organization: Organization, now: datetime | None = None) -> list[BudgetAlert]:
    """The organisation's active budgets at or above their warning level (at most three queries)."""
    rows = [row for row in budget_consumption(organization=organization, now=now) if row.active]
    if not rows:
        return []
    levels = Budget.objects.filter(organization=organization, pk__in=[row.id for row in rows])
    warn = {str(pk): percent for pk, percent in levels.values_list("pk", "warn_percent")}
    alerts = []
    for row in rows:
        percent = warn.get(row.id) or DEFAULT_WARN_PERCENT
        if row.used * 100 < row.limit * percent:
            continue
        alerts.append(
            BudgetAlert(
                name=row.name,
                used=row.used,
                limit=row.limit,
                currency=row.currency,
                percent=row.percent,
                exceeded=row.used >= row.limit,
                url=reverse("admin:agents_budget_change", args=[row.id]),
            )
        )
    return alerts


def connector_alerts(*, organization: Organization, now: datetime | None = None) -> list[ConnectorAlert]:
    """The organisation's connectors whose latest call of the last :data:`RECENT_CALLS` failed, or whose
    circuit breaker is open in this process (one query)."""
    since = (now or timezone.now()) - RECENT_CALLS
    recent = ConnectorCallLog.objects.filter(
        organization=organization, connector=OuterRef("pk"), created_at__gte=since
    ).order_by("-created_at", "-id")
    failed = Q(call_logs__status=CallStatus.ERROR, call_logs__created_at__gte=since)
    connectors = list(
        Connector.objects.for_org(organization)
        .annotate(
            last_status=Subquery(recent.values("status")[:1]),
            last_error_at=Max("call_logs__created_at", filter=failed),
            errors=Count("call_logs", filter=failed),
        )
        .order_by("name")
    )
    circuits = open_breakers(str(connector.pk) for connector in connectors)
    changelist = reverse("admin:connectors_connectorcalllog_changelist")
    return [
        ConnectorAlert(
            name=connector.name,
            last_error_at=connector.last_error_at,
            errors=connector.errors,
            circuit_open=str(connector.pk) in circuits,
            url=f"{changelist}?connector__id__exact={connector.pk}&status__exact={CallStatus.ERROR}",
        )
        for connector in connectors
        if connector.last_status == CallStatus.ERROR or str(connector.pk) in circuits
    ]


def org_dashboard_cards(*, organizations: Iterable[Organization]) -> list[OrgCard]:
    """One card per organisation, in the order given (the caller scopes them to the admin)."""
    now = timezone.now()
    return [
        OrgCard(
            organization=org,
            approvals=approvals_figure(organization=org),
            read_only=read_only_figure(organization=org),
            budgets=budget_alerts(organization=org, now=now),
            connectors=connector_alerts(organization=org, now=now),
        )
        for org in organizations
    ]


@dataclass(frozen=True, slots=True)
class OrgDashboard:
    """The home page's cards: the first :data:`MAX_CARDS` of ``total`` organisations, by name."""

    cards: list[OrgCard]
    total: int

    @property
    def left_out(self) -> int:
        return self.total - len(self.cards)


def org_dashboard(*, organizations: QuerySet[Organization]) -> OrgDashboard:
    """The cards of the first :data:`MAX_CARDS` of ``organizations`` (already scoped), by name."""
    first = list(organizations.order_by("name", "pk")[: MAX_CARDS + 1])
    total = len(first) if len(first) <= MAX_CARDS else organizations.count()
    return OrgDashboard(cards=org_dashboard_cards(organizations=first[:MAX_CARDS]), total=total)
