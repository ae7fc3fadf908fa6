"""``/api/v1/orgs/<slug>/members/``: owners and admins list members, invite existing accounts, re-role
and remove members; ``…/member-invitations/`` lists and cancels the pending invitations.

An existing user is named by exact username or e-mail address (users are never browsed) and is
**invited** (202): they become a member when they accept while signed in (issue 31). Only owners grant,
change or remove the owner role (403 otherwise); the last owner can neither leave nor be demoted (409).
Organisation keys' service users are neither listed nor reachable here (they are managed with their
keys) and can be invited nowhere. Every change is audited and ``is_staff`` follows the role.
"""

from __future__ import annotations

from typing import Any, NoReturn

from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, permissions, serializers, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from platform_core.admin.members import user_find_by_identifier
from platform_core.identity.api_keys.keys import without_service_users
from platform_core.identity.members.invitations import (
    member_invitation_cancel,
    member_invitation_problem,
    member_invitation_send,
)
from platform_core.identity.members.outcomes import MemberNotAdded
from platform_core.models import Membership, MembershipInvitation
from platform_core.request_meta import client_ip
from platform_core.services import MembershipRefused, membership_remove, membership_save
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgMember, OrgScopedViewMixin


class MembershipConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class MemberSerializer(serializers.ModelSerializer):
    user = serializers.CharField(
        write_only=True,
        max_length=254,
        help_text=_(
            "On create: the exact username or e-mail address of an existing user, who is invited (202)."
        ),
    )
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "user", "username", "email", "role", "created_at"]
        read_only_fields = ["id", "created_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance is not None and not isinstance(self.instance, list):
            self.fields["user"].required = False

    def validate_user(self, value: str) -> Any:
        if self.instance is not None:
            raise serializers.ValidationError(
                _("A membership's user cannot change: remove it and add another.")
            )
        found = user_find_by_identifier(identifier=value.strip())
        if not found:
            raise serializers.ValidationError(_("No active user has this username or e-mail address."))
        if len(found) > 1:
            raise serializers.ValidationError(
                _("Several users have this e-mail address: enter the username.")
            )
        return found[0]

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if self.instance is None and "user" in attrs:
            problem = member_invitation_problem(
                organization=self.context["org"],
                user=attrs["user"],
                role=attrs.get("role", "member"),
                actor=self.context["request"].user,
            )
            if isinstance(problem, MemberNotAdded):
                raise serializers.ValidationError({"user": problem.message})
            if isinstance(problem, MembershipRefused):
                _raise_refusal(problem)
        return attrs


class MemberInvitationSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)
    email = serializers.CharField(source="user.email", read_only=True)
    invited_by = serializers.SerializerMethodField()
    status = serializers.SerializerMethodField()

    class Meta:
        model = MembershipInvitation
        fields = ["id", "username", "email", "role", "invited_by", "status", "created_at", "expires_at"]
        read_only_fields = fields

    def get_invited_by(self, obj: MembershipInvitation) -> str | None:
        return obj.invited_by.get_username() if obj.invited_by is not None else None

    def get_status(self, obj: MembershipInvitation) -> str:
        return "expired" if obj.expired else "invited"


def _raise_refusal(refusal: MembershipRefused) -> NoReturn:
    if refusal.code == "owner_only":
        raise exceptions.PermissionDenied(refusal.message, code=refusal.code)
    if refusal.code == "service_user":
        raise serializers.ValidationError({"user": refusal.message})
    raise MembershipConflict(refusal.message, code=refusal.code)


class MemberViewSet(OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's members and their roles (owners and admins only); a POST invites."""

    queryset = Membership.objects.select_related("user").order_by("user__username")
    serializer_class = MemberSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def filter_org_queryset(self, queryset: Any) -> Any:
        """Without organisation keys' service users: managed with their keys, never as members."""
        return without_service_users(queryset, path="user__")

    @extend_schema(request=MemberSerializer, responses={202: MemberInvitationSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Invite an existing account: it becomes a member when the person accepts (202)."""
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        outcome = member_invitation_send(
            organization=self.org,
            user=data["user"],
            role=data.get("role", "member"),
            actor=request.user,
            invitations_url=request.build_absolute_uri(reverse("invitations")),
            ip_address=client_ip(request),
        )
        if isinstance(outcome, MemberNotAdded):
            raise serializers.ValidationError({"user": outcome.message})
        if isinstance(outcome, MembershipRefused):
            _raise_refusal(outcome)
        body = MemberInvitationSerializer(outcome.invitation, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_202_ACCEPTED)

    def perform_update(self, serializer: Any) -> None:
        membership = serializer.instance
        outcome = membership_save(
            organization=self.org,
            user=membership.user,
            role=serializer.validated_data.get("role", membership.role),
            actor=self.request.user,
            ip_address=client_ip(self.request),
        )
        if isinstance(outcome, MembershipRefused):
            _raise_refusal(outcome)
        serializer.instance = outcome.membership

    def perform_destroy(self, instance: Membership) -> None:
        outcome = membership_remove(
            membership=instance, actor=self.request.user, ip_address=client_ip(self.request)
        )
        if isinstance(outcome, MembershipRefused):
            _raise_refusal(outcome)


class MemberInvitationViewSet(
    OrgScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The organisation's pending invitations (owners and admins): list, read, cancel (DELETE)."""

    queryset = MembershipInvitation.objects.select_related("user", "invited_by").order_by("user__username")
    serializer_class = MemberInvitationSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]

    def perform_destroy(self, instance: MembershipInvitation) -> None:
        member_invitation_cancel(
            invitation=instance, actor=self.request.user, ip_address=client_ip(self.request)
        )
