"""Separation of duties for approvals: the person who asked never decides their own request, on any
channel (:func:`is_own_request`); and with an organisation's ``approval_config_cooldown_hours`` set,
whoever changed its approval configuration within that many hours cannot decide its requests.

"Approval configuration" is every audited change of approval policies (approver lists included) and
Feishu channels, every re-send of a request, and the cooldown setting itself. Lowering the setting does
not lift it early: a value is in force until as many hours after it was replaced.

In the web app and the API the decider is a platform user, checked against the audit log's actor. On
Feishu a click names only an ``open_id``, and whoever set a channel's keys can sign a click as anyone, so
a click is refused while the channel's credentials changed within the cooldown, from an ``open_id``
added to the request's policy within it, and from an ``open_id`` an admin linked to a member by hand
within it (linking one's own Feishu account to an approver would otherwise let one decide as them).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.db.models import Q

from hooks.models import ApprovalRequest, FeishuChannel
from platform_core.models import MAX_APPROVAL_COOLDOWN_HOURS, AuditLog, LinkedIdentity, Organization

if TYPE_CHECKING:
    from django.contrib.auth.models import User

COOLDOWN_ACTION = "organization.approval_cooldown.changed"
RESENT_ACTION = "approval.resent"
_CONFIG_PREFIXES = ("approval_policy.", "feishu_channel.", "linked_identity.")
_CONFIG_ACTIONS = (RESENT_ACTION, COOLDOWN_ACTION)


def is_own_request(*, approval: ApprovalRequest, user: User | None) -> bool:
    """Whether ``user`` asked for ``approval`` (the run's user): they may never decide it."""
    return user is not None and approval.requested_by_id is not None and approval.requested_by_id == user.pk


def approval_config_actions() -> Q:
    """The audit actions that count as changing approval configuration."""
    query = Q(action__in=_CONFIG_ACTIONS)
    for prefix in _CONFIG_PREFIXES:
        query |= Q(action__startswith=prefix)
    return query


def approval_cooldown_hours(*, organization_id: int, now: datetime) -> int:
    """The cooldown in force: the current setting, or a higher one replaced less than its hours ago."""
    hours = (
        Organization.objects.filter(pk=organization_id)
        .values_list("approval_config_cooldown_hours", flat=True)
        .first()
        or 0
    )
    replaced = AuditLog.objects.filter(
        organization_id=organization_id,
        action=COOLDOWN_ACTION,
        created_at__gte=now - timedelta(hours=MAX_APPROVAL_COOLDOWN_HOURS),
    ).values_list("before", "created_at")
    for before, changed_at in replaced:
        previous = (before or {}).get("approval_config_cooldown_hours") or 0
        if isinstance(previous, int) and changed_at + timedelta(hours=previous) > now:
            hours = max(hours, previous)
    return hours


def user_in_cooldown(*, user: User, organization_id: int, hours: int, now: datetime) -> bool:
    """Whether ``user`` changed the organisation's approval configuration in the last ``hours``."""
    if hours <= 0 or not user.is_authenticated:
        return False
    return (
        AuditLog.objects.filter(
            organization_id=organization_id, actor=user, created_at__gte=now - timedelta(hours=hours)
        )
        .filter(approval_config_actions())
        .exists()
    )


def feishu_click_in_cooldown(
    *, approval: ApprovalRequest, channel: FeishuChannel, open_id: str, hours: int, now: datetime
) -> bool:
    """Whether a click by ``open_id`` on ``channel`` falls inside the cooldown (see the module docstring)."""
    if hours <= 0:
        return False
    since = now - timedelta(hours=hours)
    if channel.credentials_changed_at is not None and channel.credentials_changed_at > since:
        return True
    if approval.policy_id is None:
        return False
    changes = AuditLog.objects.filter(
        organization_id=approval.organization_id,
        action__in=("approval_policy.created", "approval_policy.updated"),
        target_type="hooks.approvalpolicy",
        target_id=str(approval.policy_id),
        created_at__gte=since,
    ).values_list("before", "after")
    for before, after in changes:
        added = set((after or {}).get("approver_open_ids") or ()) - set(
            (before or {}).get("approver_open_ids") or ()
        )
        if open_id in added:
            return True
    return False


def feishu_link_in_cooldown(*, identity: LinkedIdentity, hours: int, now: datetime) -> bool:
    """Whether ``identity`` was linked by an org admin's hand within the cooldown."""
    if hours <= 0 or identity.organization_id is None:
        return False
    return identity.created_at > now - timedelta(hours=hours)
