"""Read helpers of the approval machinery. Every lookup is scoped to an organisation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404

from hooks import addressed
from hooks.duties import is_own_request
from hooks.models import AgentHookSettings, ApprovalRequest, FeishuChannel
from platform_core.identity.api_keys.keys import is_service_user
from platform_core.models import ADMIN_ROLES, Membership, Organization, Role

if TYPE_CHECKING:
    from django.contrib.auth.models import User

DECIDER_ROLES = ADMIN_ROLES | {Role.APPROVER}


def approval_web_decider_ok(*, approval: ApprovalRequest, user: User) -> bool:
    """Whether ``user`` may decide ``approval`` in the web app or the API.

    The user must hold the approver, admin or owner role in the request's organisation and be one of
    the request's platform approvers (frozen when it was created: a policy that lists nobody names every
    approver, admin and owner); a request that names nobody (made before that rule) by owners and admins.
    The person who asked never decides their own request, and an organisation key's service user
    decides nothing, whatever the request names.
    """
    if not user.is_authenticated or not user.is_active:
        return False
    if is_own_request(approval=approval, user=user) or is_service_user(user):
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


def approval_list_for_user(*, organization: Organization, user: User) -> QuerySet[ApprovalRequest]:
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


def approval_pending_for_others(*, organization: Organization, user: User) -> int:
    """How many of the organisation's pending requests do not name ``user`` (for its empty inbox)."""
    through = ApprovalRequest.approver_users.through
    names_user = Exists(through.objects.filter(approvalrequest_id=OuterRef("pk"), user_id=user.pk))
    return ApprovalRequest.objects.for_org(organization).filter(status="pending").exclude(names_user).count()


def approval_visible_to(*, approval: ApprovalRequest, user: User) -> bool:
    """Whether ``user`` may open ``approval``'s page: those who see it in their inbox, and the member
    who asked (read-only, to follow their own request)."""
    if approval.requested_by_id is not None and approval.requested_by_id == user.pk:
        return Membership.objects.filter(user=user, organization_id=approval.organization_id).exists()
    return (
        approval_list_for_user(organization=approval.organization, user=user).filter(pk=approval.pk).exists()
    )


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
        return addressed.feishu_channels().filter(pk=channel_id, is_active=True).first()
    except (ValidationError, ValueError):
        return None


def hook_settings_for_agent(*, organization_id: int | None, agent_id: Any) -> AgentHookSettings | None:
    if organization_id is None:
        return None
    return AgentHookSettings.objects.for_org(organization_id).filter(agent_id=agent_id).first()
