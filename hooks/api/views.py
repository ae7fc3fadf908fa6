"""REST endpoints of the guard rails, under ``/api/v1/orgs/<org_slug>/``.

- ``approvals/`` (approvers, admins, owners: the requests they may see) and ``approvals/<id>/decide/``
  (``{"decision": "approve"|"reject", "comment": ""}``, through the same ``approval_decide`` as the
  inbox and the Feishu callback); ``approvals/<id>/resend/`` (owners and admins: re-bind a pending
  request to its policy's current channel and approvers, audited);
- ``approval-policies/``, ``feishu-channels/`` (secrets write-only; ``test-card/`` posts a test card),
  ``rate-limits/``, ``agent-hook-settings/``: owners and admins, every write audited.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from hooks.api.serializers import (
    AgentHookSettingsSerializer,
    ApprovalPolicySerializer,
    ApprovalRequestSerializer,
    DecisionSerializer,
    FeishuChannelSerializer,
    RateLimitSerializer,
    TestCardSerializer,
)
from hooks.delivery import channel_send_test_card
from hooks.feishu.errors import FeishuError
from hooks.models import (
    AgentHookSettings,
    ApprovalPolicy,
    ApprovalRequest,
    DecidedVia,
    FeishuChannel,
    RateLimit,
)
from hooks.selectors import approval_list_for_user
from hooks.services import ApprovalForbidden, approval_decide, approval_resend
from platform_core.api.audited import AuditedWritesMixin
from platform_core.identity.api_keys.scopes import Scope
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgApprover, IsOrgMember, OrgScopedViewMixin


class ApprovalViewSet(
    OrgScopedViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Approval requests the caller may see, newest first; ``?status=pending`` narrows the list."""

    queryset = ApprovalRequest.objects.all()
    serializer_class = ApprovalRequestSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgApprover]
    api_key_scopes = {"decide": Scope.CHAT}

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        visible = approval_list_for_user(organization=self.org, user=self.request.user)
        queryset = queryset.filter(pk__in=visible.values("pk")).select_related("requested_by", "decided_by")
        queryset = queryset.prefetch_related("approver_users").order_by("-created_at")
        wanted = self.request.query_params.get("status")
        return queryset.filter(status=wanted) if wanted else queryset

    @extend_schema(parameters=[OpenApiParameter("status", str, description="pending, approved, rejected, …")])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=DecisionSerializer, responses=ApprovalRequestSerializer)
    @action(detail=True, methods=["post"], url_path="decide")
    def decide(self, request: Request, org_slug: str, pk: Any = None) -> Response:
        """Approve or reject. 200 with the request when decided now; 409 when it was already decided."""
        approval = self.get_object()
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            result = approval_decide(
                approval=approval,
                decision=body.validated_data["decision"],
                via=DecidedVia.WEB,
                actor=request.user,
                comment=body.validated_data.get("comment", ""),
                ip_address=client_ip(request),
            )
        except ApprovalForbidden as exc:
            raise PermissionDenied(exc.message) from exc
        data = self.get_serializer(result.approval).data
        return Response(data, status=status.HTTP_200_OK if result.changed else status.HTTP_409_CONFLICT)

    @extend_schema(request=None, responses=ApprovalRequestSerializer)
    @action(
        detail=True,
        methods=["post"],
        url_path="resend",
        permission_classes=[permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin],
    )
    def resend(self, request: Request, org_slug: str, pk: Any = None) -> Response:
        """Owners and admins: re-bind a pending request to its policy's current channel, credentials and
        approvers and send a new card (audited). 200 with the request; 409 when it is no longer pending."""
        outcome = approval_resend(
            approval=self.get_object(), actor=request.user, ip_address=client_ip(request)
        )
        data = self.get_serializer(outcome.approval).data
        return Response(data, status=status.HTTP_200_OK if outcome.resent else status.HTTP_409_CONFLICT)


class _AuditedConfigViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """Admin-only configuration; every write is audited (``platform_core.audit.audited``)."""

    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]


class ApprovalPolicyViewSet(_AuditedConfigViewSet):
    """Which tool calls need approval, by whom, where the card goes and how long to wait."""

    queryset = ApprovalPolicy.objects.prefetch_related(
        "actions", "connectors", "approver_users", "approver_users__linked_identities"
    )
    serializer_class = ApprovalPolicySerializer


class FeishuChannelViewSet(_AuditedConfigViewSet):
    """Feishu apps that carry approval cards. Secrets can be set or cleared, never read."""

    queryset = FeishuChannel.objects.all()
    serializer_class = FeishuChannelSerializer

    @extend_schema(
        request=None, responses={200: TestCardSerializer, 400: TestCardSerializer, 502: TestCardSerializer}
    )
    @action(detail=True, methods=["post"], url_path="test-card")
    def test_card(self, request: Request, org_slug: str, pk: Any = None) -> Response:
        """Post a test card to the channel's default chat: 200 when sent, 400 when the channel has no
        default chat (nothing to send to), 502 with Feishu's or the network's error otherwise."""
        channel = self.get_object()
        if not channel.default_chat_id:
            error = _("The channel has no default chat: set one to send a test card.")
            return Response({"sent": False, "error": error}, status=status.HTTP_400_BAD_REQUEST)
        try:
            message_id = channel_send_test_card(channel=channel)
        except FeishuError as exc:
            return Response({"sent": False, "error": str(exc)}, status=status.HTTP_502_BAD_GATEWAY)
        return Response({"sent": True, "message_id": message_id})


class RateLimitViewSet(_AuditedConfigViewSet):
    """Call limits per connector and per user."""

    queryset = RateLimit.objects.select_related("connector")
    serializer_class = RateLimitSerializer


class AgentHookSettingsViewSet(_AuditedConfigViewSet):
    """Per-agent switches of rate limits, truncation and session context (the rest always runs)."""

    queryset = AgentHookSettings.objects.select_related("agent")
    serializer_class = AgentHookSettingsSerializer
