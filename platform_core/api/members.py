"""``/api/v1/orgs/<slug>/members/``: owners and admins list, add, re-role and remove members.

A member is added by an existing user's exact username or e-mail address (users are never browsed).
Only owners grant, change or remove the owner role (403 otherwise); the last owner can neither leave
nor be demoted (409). Every change is audited and ``is_staff`` follows the role.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions, permissions, serializers, status, viewsets

from platform_core.admin_members import user_find_by_identifier
from platform_core.models import Membership
from platform_core.request_meta import client_ip
from platform_core.services import MembershipRefused, membership_remove, membership_save
from platform_core.tenancy import IsOrgAdmin, IsOrgMember, OrgScopedViewMixin


class MembershipConflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class MemberSerializer(serializers.ModelSerializer):
    user = serializers.CharField(
        write_only=True,
        max_length=254,
        help_text=_("On create: the exact username or e-mail address of an existing user."),
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
        user = found[0]
        if Membership.objects.filter(organization=self.context["org"], user=user).exists():
            raise serializers.ValidationError(_("This user is already a member of the organisation."))
        return user


def _raise_refusal(refusal: MembershipRefused) -> None:
    if refusal.code == "owner_only":
        raise exceptions.PermissionDenied(refusal.message, code=refusal.code)
    raise MembershipConflict(refusal.message, code=refusal.code)


class MemberViewSet(OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's members and their roles (owners and admins only)."""

    queryset = Membership.objects.select_related("user").order_by("user__username")
    serializer_class = MemberSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]
    http_method_names = ["get", "post", "patch", "put", "delete", "head", "options"]

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        outcome = membership_save(
            organization=self.org,
            user=data["user"],
            role=data.get("role", "member"),
            actor=self.request.user,
            ip_address=client_ip(self.request),
        )
        if isinstance(outcome, MembershipRefused):
            _raise_refusal(outcome)
        serializer.instance = outcome.membership

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
