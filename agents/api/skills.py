"""``/api/v1/orgs/<slug>/skills/``: the organisation's skills, their versions, import and export.

Members read every skill of the organisation (its current version, its versions, its export); owners
and admins create, change, switch on or off, delete and import them, each write through the services
(versioned and audited). Another organisation's skill is the 404 of a missing one on every route.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import HttpResponse
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from agents.api.skill_serializers import (
    SkillDetailSerializer,
    SkillImportedSerializer,
    SkillImportSerializer,
    SkillListSerializer,
    SkillSerializer,
    SkillVersionSerializer,
)
from agents.skills.models import Skill
from agents.skills.packaging import ZIP_MAX_BYTES
from agents.skills.selectors import skill_export, skill_files_current, skill_versions
from agents.skills.services import (
    SkillImportRefused,
    skill_create,
    skill_delete,
    skill_import,
    skill_update,
)
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin


@extend_schema_view(
    list=extend_schema(summary="The organisation's skills (without their bodies)"),
    create=extend_schema(
        summary="Create a skill (admins): version 1",
        request=SkillSerializer,
        responses={201: SkillDetailSerializer},
    ),
    retrieve=extend_schema(
        summary="A skill's current version, with its body and files", responses=SkillDetailSerializer
    ),
    partial_update=extend_schema(
        summary="Change a skill (admins): a change of its content adds a version; is_active switches it",
        request=SkillSerializer,
        responses=SkillDetailSerializer,
    ),
    destroy=extend_schema(summary="Delete a skill with its versions (admins)"),
)
class SkillViewSet(OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's skills; writes go through the services, versioned and audited."""

    queryset = Skill.objects.all()
    serializer_class = SkillSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_serializer_class(self) -> type[BaseSerializer]:
        return SkillListSerializer if self.action == "list" else SkillSerializer

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset.order_by("name")

    def _shown(self, skill: Skill) -> dict[str, Any]:
        return SkillDetailSerializer(skill, context={"files": skill_files_current(skill=skill)}).data

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(self._shown(self.get_object()))

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        skill = skill_create(
            organization=self.org,
            name=data["name"],
            description=data["description"],
            body=data.get("body", ""),
            files=data.get("files"),
            is_active=data.get("is_active", True),
            actor=request.user,
            ip_address=client_ip(request),
        )
        return Response(self._shown(skill), status=status.HTTP_201_CREATED)

    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        skill = self.get_object()
        serializer = self.get_serializer(skill, data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        skill_update(
            skill=skill,
            actor=request.user,
            ip_address=client_ip(request),
            **{
                field: data[field]
                for field in ("name", "description", "body", "files", "is_active")
                if field in data
            },
        )
        return Response(self._shown(skill))

    def perform_destroy(self, instance: Skill) -> None:
        skill_delete(skill=instance, actor=self.request.user, ip_address=client_ip(self.request))

    @extend_schema(summary="A skill's versions, newest first", responses=SkillVersionSerializer(many=True))
    @action(detail=True, methods=["get"])
    def versions(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        page = self.paginate_queryset(skill_versions(skill=self.get_object()))
        return self.get_paginated_response(SkillVersionSerializer(page, many=True).data)

    @extend_schema(
        summary="Download a skill as the .zip of its folder (SKILL.md and its files)",
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            404: OpenApiResponse(description="No such skill in the organisation"),
        },
    )
    @action(detail=True, methods=["get"])
    def export(self, request: Request, *args: Any, **kwargs: Any) -> HttpResponse:
        exported = skill_export(skill=self.get_object())
        response = HttpResponse(exported.data, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{exported.filename}"'
        return response

    @extend_schema(
        summary="Import a skill folder's .zip (admins)",
        description=(
            "`multipart/form-data` with the .zip in `file`: one folder holding `SKILL.md` (YAML front matter "
            "with `name` and `description`, then the Markdown body) and the skill's other text files, the "
            "open Agent Skills layout. A new name creates the skill (201, `created`); the name of a skill of "
            "the organisation makes a new version of it (200, `updated`), or nothing when it is the same "
            "(200, `unchanged`). 400 with `file` says why a zip was refused (binary file, no SKILL.md...)."
        ),
        request={"multipart/form-data": SkillImportSerializer},
        responses={201: SkillImportedSerializer, 200: SkillImportedSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import", url_name="import")
    def import_zip(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = SkillImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        if (upload.size or 0) > ZIP_MAX_BYTES:
            raise ValidationError(
                {"file": [_("The zip is larger than %(limit)d MiB.") % {"limit": ZIP_MAX_BYTES // 2**20}]}
            )
        outcome = skill_import(
            organization=self.org, data=upload.read(), actor=request.user, ip_address=client_ip(request)
        )
        if isinstance(outcome, SkillImportRefused):
            raise ValidationError({"file": [outcome.message], **outcome.problems})
        word = "created" if outcome.created else "updated" if outcome.changed else "unchanged"
        return Response(
            {"outcome": word, "skill": self._shown(outcome.skill)},
            status=status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK,
        )

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        """An export answers whatever the client accepts (its errors in JSON)."""
        return super().perform_content_negotiation(request, force=force or self.action == "export")
