"""REST endpoints of the tenancy core: the caller's organisations, org settings, the audit log."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, mixins, permissions, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from platform_core.api.export import ByFormatParameter, CSVRenderer, JSONLinesRenderer
from platform_core.api.serializers import (
    AuditLogSerializer,
    OrganizationSerializer,
    OrganizationSettingsSerializer,
)
from platform_core.audit.export import AuditFilterInvalid, audit_export_response, audit_filter_parse
from platform_core.identity.api_keys.permissions import HasApiKeyScope
from platform_core.models import AuditLog, Membership
from platform_core.request_meta import client_ip
from platform_core.selectors import audit_log_list_for_org, organizations_for_user
from platform_core.services import (
    organization_set_approval_cooldown,
    organization_set_attachment_retention,
    organization_set_memory_retention,
    organization_set_read_only,
    organization_set_time_zone,
)
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin


class OrganizationListView(generics.ListAPIView):
    """The organisations the caller belongs to, with the caller's role in each."""

    serializer_class = OrganizationSerializer
    permission_classes = [HasApiKeyScope, permissions.IsAuthenticated]

    def get_queryset(self) -> Any:
        return organizations_for_user(user=self.request.user).order_by("name")

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        context["roles"] = dict(
            Membership.objects.filter(user=self.request.user).values_list("organization_id", "role")
        )
        return context


class OrganizationSettingsView(OrgScopedViewMixin, generics.GenericAPIView):
    """Read-only mode, the approval cooldown (separation of duties), the time zone and the retention of chat
    attachments and of memories of the organisation: members read them, owners and admins change them."""

    serializer_class = OrganizationSettingsSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]

    def get(self, request: Request, org_slug: str) -> Response:
        return Response(self.get_serializer(self.org).data)

    @extend_schema(request=OrganizationSettingsSerializer, responses=OrganizationSettingsSerializer)
    def patch(self, request: Request, org_slug: str) -> Response:
        serializer = self.get_serializer(self.org, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        org = organization_set_read_only(
            organization=self.org,
            actor=request.user,
            enabled=data.get("read_only", self.org.read_only),
            reason=data.get("read_only_reason", self.org.read_only_reason),
            ip_address=client_ip(request),
        )
        if "approval_config_cooldown_hours" in data:
            org = organization_set_approval_cooldown(
                organization=org,
                actor=request.user,
                hours=data["approval_config_cooldown_hours"],
                ip_address=client_ip(request),
            )
        if "time_zone" in data:
            org = organization_set_time_zone(
                organization=org,
                actor=request.user,
                time_zone=data["time_zone"],
                ip_address=client_ip(request),
            )
        if "attachment_retention_days" in data:
            org = organization_set_attachment_retention(
                organization=org,
                actor=request.user,
                days=data["attachment_retention_days"],
                ip_address=client_ip(request),
            )
        if "memory_retention_days" in data:
            org = organization_set_memory_retention(
                organization=org,
                actor=request.user,
                days=data["memory_retention_days"],
                ip_address=client_ip(request),
            )
        return Response(self.get_serializer(org).data)

    put = patch


_FILTER_PARAMETERS = [
    OpenApiParameter("since", str, description="from this ISO date or date-time on (inclusive)"),
    OpenApiParameter("until", str, description="up to this ISO date (its whole day) or date-time"),
    OpenApiParameter("action", str, description="one action, e.g. agent.updated"),
]


class AuditLogViewSet(
    OrgScopedViewMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """The organisation's audit log, newest first; ``?since=&until=&action=`` narrow it. Append-only: no
    write methods exist. ``export/?format=csv|jsonl`` streams the filtered log as a download."""

    serializer_class = AuditLogSerializer
    queryset = AuditLog.objects.all()
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]

    def get_base_queryset(self) -> Any:
        return (
            audit_log_list_for_org(organization=self.org) if hasattr(self, "org") else AuditLog.objects.none()
        )

    def filter_org_queryset(self, queryset: Any) -> Any:
        parsed = audit_filter_parse(self.request.query_params)
        if isinstance(parsed, AuditFilterInvalid):
            raise ValidationError({parsed.field: [parsed.message]})
        return parsed.apply(queryset)

    @extend_schema(parameters=_FILTER_PARAMETERS)
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=["csv", "jsonl"], description="csv (default) or jsonl"),
            *_FILTER_PARAMETERS,
        ],
        responses={(200, "text/csv"): OpenApiTypes.STR, (200, "application/jsonl"): OpenApiTypes.STR},
    )
    @action(
        detail=False,
        methods=["get"],
        url_path="export",
        renderer_classes=[CSVRenderer, JSONLinesRenderer],
        content_negotiation_class=ByFormatParameter,
    )
    def export(self, request: Request, org_slug: str) -> StreamingHttpResponse:
        """The filtered log as a CSV or JSON Lines download, oldest entry first (owners and admins)."""
        return audit_export_response(
            queryset=self.get_queryset(),
            fmt=request.accepted_renderer.format,
            name=f"audit-{self.org.slug}",
        )
