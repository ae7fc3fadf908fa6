"""``/api/v1/orgs/<slug>/groups/``: the organisation's member groups (issue 34).

Every member lists and reads the groups (their names, descriptions and sizes); who is in each is shown
to owners and admins only, as the members list is theirs only. Owners and admins create, rename and
delete groups, set their members (PATCH ``members``) or add and remove some
(``…/<id>/add-members/``, ``…/<id>/remove-members/``). Only members of the organisation can be put in
a group (400 on ``members`` otherwise). Every change is audited (``member_group.*``); another
organisation's group is the 404 of a missing one on every route.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import permissions, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from platform_core.identity.api_keys.keys import without_service_users
from platform_core.identity.groups.selectors import member_group_list_for_org
from platform_core.identity.groups.services import (
    NAME_MAX_LENGTH,
    group_name_error,
    member_group_create,
    member_group_delete,
    member_group_members_add,
    member_group_members_remove,
    member_group_update,
)
from platform_core.models import ADMIN_ROLES, MemberGroup, Membership
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin, role_in

DESCRIPTION_MAX_LENGTH = MemberGroup._meta.get_field("description").max_length


class GroupMemberField(serializers.PrimaryKeyRelatedField):
    """A user id among the URL organisation's members (people, not organisation keys' service users);
    any other id is refused with the same message, so nobody learns which ids exist elsewhere."""

    default_error_messages = {
        **serializers.PrimaryKeyRelatedField.default_error_messages,
        "does_not_exist": _("Only members of the organisation can be put in a group."),
    }

    def get_queryset(self) -> Any:
        org = self.context.get("org")
        users = super().get_queryset()
        if org is None:
            return users.none()
        members = without_service_users(Membership.objects.filter(organization=org), path="user__")
        return users.filter(pk__in=members.values("user_id"))


class MemberGroupSerializer(serializers.Serializer):
    """A group. ``members`` (user ids) is shown to owners and admins only."""

    id = serializers.IntegerField(read_only=True)
    name = serializers.CharField(max_length=NAME_MAX_LENGTH, help_text=_("Unique in the organisation."))
    description = serializers.CharField(
        max_length=DESCRIPTION_MAX_LENGTH, required=False, allow_blank=True, default=""
    )
    members = GroupMemberField(
        queryset=get_user_model().objects.all(),
        many=True,
        required=False,
        help_text=_("Ids of the organisation's members in the group (admins only)."),
    )
    member_count = serializers.IntegerField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)

    def validate_name(self, value: str) -> str:
        org = self.context.get("org")
        group_id = self.instance.pk if self.instance is not None else None
        problem = group_name_error(
            organization_id=org.pk if org else 0, name=value.strip(), group_id=group_id
        )
        if problem:
            raise serializers.ValidationError(problem)
        return value.strip()

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        if not self.context.get("show_members", True):
            del fields["members"]
        return fields


class GroupMembersSerializer(serializers.Serializer):
    """Members to add to a group."""

    members = GroupMemberField(
        queryset=get_user_model().objects.all(),
        many=True,
        allow_empty=False,
        help_text=_("Ids of the organisation's members to put in the group."),
    )


class GroupMemberIdsSerializer(serializers.Serializer):
    """Members to take out of a group."""

    members = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        allow_empty=False,
        max_length=1000,
        help_text=_("Ids of the users to take out of the group (those not in it are ignored)."),
    )


@extend_schema_view(
    list=extend_schema(summary="The organisation's member groups (members: admins only)"),
    create=extend_schema(summary="Create a member group (admins)"),
    retrieve=extend_schema(summary="One member group"),
    partial_update=extend_schema(summary="Rename a member group, or set its description or members (admins)"),
    destroy=extend_schema(summary="Delete a member group: what it gave its members goes with it (admins)"),
)
class MemberGroupViewSet(OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's member groups. Writes are audited; members are listed to admins only."""

    queryset = MemberGroup.objects.all()
    serializer_class = MemberGroupSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def is_admin(self) -> bool:
        return role_in(self.request, ADMIN_ROLES)

    def get_base_queryset(self) -> QuerySet:
        if not hasattr(self, "org"):
            return MemberGroup.objects.none()
        groups = member_group_list_for_org(organization=self.org)
        return groups.prefetch_related("members") if self.is_admin() else groups

    def get_serializer_context(self) -> dict[str, Any]:
        context = super().get_serializer_context()
        schema = getattr(self, "swagger_fake_view", False)  # the schema documents every field
        context["show_members"] = schema or (hasattr(self, "org") and self.is_admin())
        return context

    def _listed(self, group: MemberGroup) -> MemberGroup:
        """The saved group as the list shows it (with its member count)."""
        return self.get_queryset().get(pk=group.pk)

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        group = member_group_create(
            organization=self.org,
            name=data["name"],
            description=data.get("description", ""),
            members=data.get("members", ()),
            actor=self.request.user,
            ip_address=client_ip(self.request),
        )
        serializer.instance = self._listed(group)

    def perform_update(self, serializer: Any) -> None:
        data = serializer.validated_data
        changes = {k: data[k] for k in ("name", "description", "members") if k in data}
        group = member_group_update(
            group=serializer.instance,
            actor=self.request.user,
            ip_address=client_ip(self.request),
            **changes,
        )
        serializer.instance = self._listed(group)

    def perform_destroy(self, instance: MemberGroup) -> None:
        member_group_delete(group=instance, actor=self.request.user, ip_address=client_ip(self.request))

    @extend_schema(
        summary="Put members in a group (admins; those already in it stay)",
        request=GroupMembersSerializer,
        responses={200: MemberGroupSerializer},
    )
    @action(detail=True, methods=["post"], url_path="add-members")
    def add_members(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        group = self.get_object()
        body = GroupMembersSerializer(data=request.data, context=self.get_serializer_context())
        body.is_valid(raise_exception=True)
        member_group_members_add(
            group=group,
            users=body.validated_data["members"],
            actor=request.user,
            ip_address=client_ip(request),
        )
        return Response(self.get_serializer(self._listed(group)).data)

    @extend_schema(
        summary="Take members out of a group (admins)",
        request=GroupMemberIdsSerializer,
        responses={200: MemberGroupSerializer},
    )
    @action(detail=True, methods=["post"], url_path="remove-members")
    def remove_members(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        group = self.get_object()
        body = GroupMemberIdsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        member_group_members_remove(
            group=group,
            user_ids=body.validated_data["members"],
            actor=request.user,
            ip_address=client_ip(request),
        )
        return Response(self.get_serializer(self._listed(group)).data)
