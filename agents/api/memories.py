"""``/api/v1/orgs/<slug>/memories/``: the caller's own memories in the organisation (issue 36).

A member lists (newest first, ``?search=`` over the text), reads, writes, changes and deletes their own
memories, each write through the services (audited without the text). Another person's memory, of this
organisation or another, is the 404 of a missing one on every route; so is every memory for a superuser
who is not a member. API keys: ``read`` reads, ``chat`` writes (as for the caller's conversations).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, permissions, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api.attachments import IsMemberOfOrg
from agents.api.memory_serializers import MemorySerializer
from agents.memory.models import Memory, MemoryOrigin
from agents.memory.selectors import memories_of_person, memory_search
from agents.memory.services import MemoryRefused, memory_create, memory_delete, memory_update
from platform_core.identity.api_keys.scopes import Scope
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgMember, OrgScopedViewMixin


@extend_schema_view(
    list=extend_schema(
        summary="The caller's memories in the organisation, newest first",
        parameters=[
            OpenApiParameter("search", OpenApiTypes.STR, description="Words that the memory's text contains")
        ],
    ),
    retrieve=extend_schema(summary="One of the caller's memories (404 for anyone else's)"),
    create=extend_schema(
        summary="Write a memory (the caller's own): 201, or 200 with the one of the same text already kept",
        responses={201: MemorySerializer, 200: MemorySerializer},
    ),
    partial_update=extend_schema(summary="Change a memory's text"),
    destroy=extend_schema(summary="Delete a memory: no model is given it again"),
)
class MemoryViewSet(
    OrgScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """What the agents with memory keep about the caller, as the caller sees and changes it."""

    queryset = Memory.objects.all()
    serializer_class = MemorySerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsMemberOfOrg]
    api_key_write_scope = Scope.CHAT
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return Memory.objects.none()
        return memories_of_person(organization_id=self.org.pk, user=self.request.user)

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        if self.action == "list":
            queryset = memory_search(queryset, self.request.query_params.get("search", ""))
        return queryset

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        saved = memory_create(
            organization_id=self.org.pk,
            user_id=request.user.pk,
            text=serializer.validated_data["text"],
            origin=MemoryOrigin.PERSON,
            actor=request.user,
            ip_address=client_ip(request),
        )
        if isinstance(saved, MemoryRefused):
            raise ValidationError({"text": [saved.reason]})
        code = status.HTTP_201_CREATED if saved.created else status.HTTP_200_OK
        return Response(self.get_serializer(saved.memory).data, status=code)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        memory = self.get_object()
        serializer = self.get_serializer(memory, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        if "text" in serializer.validated_data:
            saved = memory_update(
                memory=memory,
                text=serializer.validated_data["text"],
                actor=request.user,
                ip_address=client_ip(request),
            )
            if isinstance(saved, MemoryRefused):
                raise ValidationError({"text": [saved.reason]})
        return Response(self.get_serializer(memory).data)

    def perform_destroy(self, instance: Memory) -> None:
        memory_delete(memory=instance, actor=self.request.user, ip_address=client_ip(self.request))
