"""Read helpers of the approval machinery. Every lookup is scoped to an organisation."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import Http404

from hooks.models import AgentHookSettings, ApprovalRequest, FeishuChannel
from platform_core.models import ADMIN_ROLES, Membership, Organization, Role

DECIDER_ROLES = ADMIN_ROLES | {Role.APPROVER}


def approval_web_decider_ok(*, approval: ApprovalRequest, user: AbstractBaseUser) -> bool:
    """Whether ``user`` may decide ``approval`` in the web app or the API.

    The user must hold the approver, admin or owner role in the request's organisation and be one of
    the policy's platform approvers; a policy without platform approvers is decided by owners and admins.
    """
    if not user.is_authenticated or not user.is_active:
        return False
    role = (
        Membership.objects.filter(user=user, organization_id=approval.organization_id)
        .values_list("role", flat=True)
        .first()
    )
    if role not in DECIDER_ROLES:
        return False
    listed = approval.approver_users.all()
    if listed.exists():
        return listed.filter(pk=user.pk).exists()
    return role in ADMIN_ROLES


def approval_list_for_user(
    *, organization: Organization, user: AbstractBaseUser
) -> QuerySet[ApprovalRequest]:
    """Requests a user may see in the inbox: owners and admins see all of the organisation's, approvers
    those that name them; other members none."""
    requests = ApprovalRequest.objects.for_org(organization).select_related("decided_by", "requested_by")
    role = (
        Membership.objects.filter(user=user, organization=organization).values_list("role", flat=True).first()
    )
    if user.is_superuser or role in ADMIN_ROLES:
        return requests.order_by("-created_at")
    if role != Role.APPROVER:
        return requests.none()
    return requests.filter(approver_users=user).order_by("-created_at")


def approval_get_for_org(*, organization: Organization, approval_id: Any) -> ApprovalRequest:
    """One request of ``organization``; a missing one and another org's answer the same 404."""
    try:
        approval = (
            ApprovalRequest.objects.for_org(organization)
            .select_related("decided_by", "requested_by")
            .filter(pk=approval_id)
            .first()
        )
    except (ValidationError, ValueError):
        approval = None
    if approval is None:
        raise Http404("No such approval request.")
    return approval


def channel_get_active(*, channel_id: Any) -> FeishuChannel | None:
    """An active Feishu channel by id (the callback view's lookup; the id itself is the secret-free key)."""
    try:
        return FeishuChannel.objects.filter(pk=channel_id, is_active=True).first()
    except (ValidationError, ValueError):
        return None


def hook_settings_for_agent(*, agent_id: Any) -> AgentHookSettings | None:
    return AgentHookSettings.objects.filter(agent_id=agent_id).first()
