"""Read helpers of the connectors app. Every lookup is scoped to an organisation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ValidationError
from django.db.models import Count, Q, QuerySet
from django.http import Http404

from agents.engine.run_context import RunContext
from connectors.models import Connector, ConnectorAction, ConnectorCallLog
from platform_core.config_cache import RunConfigScope, run_config_cached
from platform_core.models import ADMIN_ROLES, Membership, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def connector_list_for_org(*, organization: Organization) -> QuerySet[Connector]:
    """The organisation's connectors with their action counts (one query)."""
    return (
        Connector.objects.for_org(organization)
        .annotate(
            action_count=Count("actions", distinct=True),
            active_action_count=Count("actions", filter=Q(actions__is_active=True), distinct=True),
        )
        .order_by("name")
    )


def connector_get_for_org(*, organization: Organization, connector_id: Any) -> Connector:
    """One connector of ``organization``; a missing one and another org's answer the same 404."""
    connector = _by_id(Connector.objects.for_org(organization), connector_id)
    if connector is None:
        raise Http404("No such connector.")
    return connector


def action_list_for_connector(*, connector: Connector) -> QuerySet[ConnectorAction]:
    return (
        ConnectorAction.objects.filter(connector=connector, organization_id=connector.organization_id)
        .select_related("connector", "mcp_read_confirmed_by")
        .order_by("name")
    )


def action_get_for_connector(*, connector: Connector, action_id: Any) -> ConnectorAction:
    action = _by_id(action_list_for_connector(connector=connector), action_id)
    if action is None:
        raise Http404("No such action.")
    return action


def call_log_list_for_org(
    *, organization: Organization, user: User | None = None
) -> QuerySet[ConnectorCallLog]:
    """The organisation's call logs, newest first. Pass ``user`` to see only what a member may see:
    admins and owners see every call, other members only their own."""
    logs = ConnectorCallLog.objects.for_org(organization).select_related("connector", "action", "user")
    if user is not None and not user.is_superuser:
        is_admin = Membership.objects.filter(
            user=user, organization=organization, role__in=ADMIN_ROLES
        ).exists()
        if not is_admin:
            logs = logs.filter(user=user)
    return logs.order_by("-created_at", "-id")


def actions_for_tools(*, organization_id: int, connector_ids: Iterable[Any]) -> list[ConnectorAction]:
    """Active actions of the given active connectors of one organisation, connector loaded (one query).

    Connector ids of another organisation are ignored.
    """
    ids = [str(c) for c in connector_ids]
    if not ids:
        return []
    return list(
        ConnectorAction.objects.filter(
            organization_id=organization_id,
            connector__organization_id=organization_id,
            connector_id__in=ids,
            connector__is_active=True,
            is_active=True,
        )
        .select_related("connector")
        .order_by("connector__name", "name")
    )


class RunActionsSource(RunConfigScope, Protocol):
    """What the connectors need of a run (``agents.runtime.RunBlueprint`` has it): who is running, the
    agent's connectors, and their secrets to redact from every tool result."""

    @property
    def context(self) -> RunContext: ...
    @property
    def connector_ids(self) -> Sequence[str]: ...
    @property
    def run_secrets(self) -> tuple[str, ...]:
        """Every secret of the run's connectors (empty until the run manager loads them)."""
        ...


def run_connector_actions(blueprint: RunActionsSource) -> list[ConnectorAction]:
    """:func:`actions_for_tools` of a run (an ``agents.runtime.RunBlueprint``), loaded once per run, and
    once per process while the organisation's configuration is unchanged: its tools and its guard rails'
    catalogue are built from the same rows (shared, never to be mutated). A run without an organisation
    has none."""
    organization_id = blueprint.context.org_id
    if organization_id is None:
        return []
    # Keyed by the connectors too: a run of the agent may have one more than its agent's (a conversation's
    # chat files).
    return run_config_cached(
        blueprint,
        "connector_actions:" + ",".join(sorted(blueprint.connector_ids)),
        lambda: actions_for_tools(organization_id=organization_id, connector_ids=blueprint.connector_ids),
    )


def _by_id(queryset: QuerySet, object_id: Any) -> Any:
    try:
        return queryset.filter(pk=object_id).first()
    except (ValidationError, ValueError, TypeError):  # a malformed UUID is simply not found
        return None


def connector_name_free(organization: Organization, wanted: str) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``... whichever no connector of the organisation has yet (for
    the connectors the platform makes itself)."""
    taken = set(
        Connector.objects.for_org(organization).filter(name__startswith=wanted).values_list("name", flat=True)
    )
    name, number = wanted, 1
    while name in taken:
        number += 1
        name = f"{wanted}_{number}"
    return name
