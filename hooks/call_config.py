"""What the guard rails check before each connector call, read in one database hop per call.

The read-only guard, the approval gate and the rate limit each need the organisation's guard-rail
configuration as it is *now*: an admin who switches read-only mode on, adds a policy or tightens a limit
stops the next call of runs already in progress. Each used to run its own query, in its own hop to the
database thread. Now the first of them to ask reads, for the call, the organisation's read-only flag and
configuration version (one query); the active approval policies and rate limits come from the process's
cache for that version (:mod:`platform_core.config_cache`), reloaded whenever an admin change bumps it.
The others reuse what the first read for the same tool call (:class:`~hooks.state.RunGuardState`).
The audit log's recorder, the last of them, takes from it too the connector's secret values it redacts
from the call's row (cached for the version as well), so recording the call costs no read of its own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from connectors.configs import connector_secrets_for_redaction
from hooks.catalog import ActionInfo
from hooks.models import ApprovalPolicy, RateLimit
from platform_core.config_cache import config_cached
from platform_core.models import Organization


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """An active approval policy and what it covers."""

    policy: ApprovalPolicy
    action_ids: frozenset[Any]
    connector_ids: frozenset[Any]

    def covers(self, info: ActionInfo) -> bool:
        """Whether calls of the action need this policy's approval (before its condition is checked):
        the action is named, or its connector is and the policy is not for writes only or the action may
        write."""
        if info.action_id in self.action_ids:
            return True
        if info.connector_id not in self.connector_ids:
            return False
        return not (self.policy.writes_only and info.is_write is False)


@dataclass(frozen=True, slots=True)
class CallGuardConfig:
    """The organisation's guard-rail configuration as one call sees it."""

    read_only: bool
    read_only_reason: str
    policies: tuple[PolicyRule, ...]
    rate_limits: tuple[RateLimit, ...]
    #: The organisation's configuration version read with it (``None``: it has no version row).
    version: int | None = None
    #: The secret values of the call's connector (when asked for one), to redact from its call log.
    redaction_secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def policies_for(self, info: ActionInfo) -> list[ApprovalPolicy]:
        """The active policies covering the action, in name order."""
        return [rule.policy for rule in self.policies if rule.covers(info)]

    def rate_limits_for(self, info: ActionInfo) -> list[RateLimit]:
        """The active limits counting calls of the action's connector (its own and the global ones)."""
        return [limit for limit in self.rate_limits if limit.connector_id in (None, info.connector_id)]


def call_guard_config(organization_id: int, connector_id: Any = None) -> CallGuardConfig | None:
    """The configuration for a call now (sync), with the secrets of ``connector_id`` when given; ``None``
    when the organisation no longer exists."""
    row = (
        Organization.objects.filter(pk=organization_id)
        .values_list("read_only", "read_only_reason", "config_version__version")
        .first()
    )
    if row is None:
        return None
    read_only, reason, version = row
    owner = ("organization", organization_id)
    return CallGuardConfig(
        read_only=read_only,
        read_only_reason=reason,
        policies=config_cached(
            owner, version or 0, "approval_policies", lambda: policy_rules(organization_id)
        ),
        rate_limits=config_cached(owner, version or 0, "rate_limits", lambda: rate_limits(organization_id)),
        version=version,
        redaction_secrets=_secrets(organization_id, connector_id, version),
    )


def _secrets(organization_id: int, connector_id: Any, version: int | None) -> tuple[str, ...]:
    if connector_id is None:
        return ()
    if version is None:  # no version row: nothing tells when they change
        return connector_secrets_for_redaction(organization_id, connector_id)
    return config_cached(
        ("organization", organization_id),
        version,
        f"redaction_secrets:{connector_id}",
        lambda: connector_secrets_for_redaction(organization_id, connector_id),
    )


def policy_rules(organization_id: int) -> tuple[PolicyRule, ...]:
    """The organisation's active approval policies with what each covers, in name order (sync)."""
    policies = list(
        ApprovalPolicy.objects.filter(organization_id=organization_id, is_active=True)
        .select_related("channel")
        .order_by("name", "pk")
    )
    ids = [p.pk for p in policies]
    actions: dict[Any, set[Any]] = defaultdict(set)
    connectors: dict[Any, set[Any]] = defaultdict(set)
    for policy_id, action_id in ApprovalPolicy.actions.through.objects.filter(
        approvalpolicy_id__in=ids
    ).values_list("approvalpolicy_id", "connectoraction_id"):
        actions[policy_id].add(action_id)
    for policy_id, connector_id in ApprovalPolicy.connectors.through.objects.filter(
        approvalpolicy_id__in=ids
    ).values_list("approvalpolicy_id", "connector_id"):
        connectors[policy_id].add(connector_id)
    return tuple(
        PolicyRule(policy=p, action_ids=frozenset(actions[p.pk]), connector_ids=frozenset(connectors[p.pk]))
        for p in policies
    )


def rate_limits(organization_id: int) -> tuple[RateLimit, ...]:
    """The organisation's active rate limits, oldest first (sync)."""
    return tuple(RateLimit.objects.filter(organization_id=organization_id, is_active=True).order_by("pk"))
