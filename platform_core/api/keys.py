"""API keys over the REST API: ``/api/v1/api-keys/`` (the caller's personal keys) and
``/api/v1/orgs/<slug>/api-keys/`` (the organisation's keys, owners and admins only). List, create (the
response carries the raw ``key``, once) and ``POST <id>/revoke/``. Keys are never changed or deleted.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from platform_core.identity.api_keys.keys import (
    api_key_create,
    api_key_get_for_org,
    api_key_get_personal,
    api_key_list_for_org,
    api_key_list_personal,
    api_key_revoke,
)
from platform_core.identity.api_keys.permissions import HasApiKeyScope
from platform_core.identity.api_keys.scopes import request_credential
from platform_core.models import ApiKey, ApiKeyScope
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgMember, OrgScopedViewMixin


class ApiKeySerializer(serializers.ModelSerializer):
    kind = serializers.SerializerMethodField(help_text=_("personal or organisation"))
    prefix = serializers.CharField(source="key_prefix", read_only=True)
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=ApiKeyScope.choices), read_only=True)
    state = serializers.SerializerMethodField(help_text=_("active, expired or revoked"))
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    user = serializers.SlugRelatedField(
        slug_field="username", read_only=True, help_text=_("Who the key acts as.")
    )

    class Meta:
        model = ApiKey
        fields = [
            "id",
            "name",
            "kind",
            "prefix",
            "scopes",
            "state",
            "user",
            "created_by",
            "created_at",
            "expires_at",
            "last_used_at",
            "last_used_ip",
            "revoked_at",
        ]
        read_only_fields = fields

    def get_kind(self, obj: ApiKey) -> str:
        return "organisation" if obj.organization_id else "personal"

    def get_state(self, obj: ApiKey) -> str:
        return "revoked" if obj.revoked else "expired" if obj.is_expired() else "active"


class ApiKeyCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    scopes = serializers.MultipleChoiceField(choices=ApiKeyScope.choices)
    expires_at = serializers.DateTimeField(
        required=False, allow_null=True, help_text=_("Empty: the key does not expire.")
    )


class ApiKeyCreatedSerializer(ApiKeySerializer):
    key = serializers.SerializerMethodField(help_text=_("The raw key, shown only in this response."))

    class Meta(ApiKeySerializer.Meta):
        fields = [*ApiKeySerializer.Meta.fields, "key"]
        read_only_fields = fields

    def get_key(self, obj: ApiKey) -> str:
        return str(self.context["raw"])


class _ApiKeyRoutes(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """List, retrieve, create and revoke; subclasses say whose keys and how a new one is made."""

    serializer_class = ApiKeySerializer
    queryset = ApiKey.objects.all()

    def make(self, data: dict[str, Any]) -> Any:
        raise NotImplementedError

    def key_for(self, pk: Any) -> ApiKey:
        raise NotImplementedError

    def get_object(self) -> ApiKey:
        return self.key_for(self.kwargs["pk"])

    @extend_schema(request=ApiKeyCreateSerializer, responses={201: ApiKeyCreatedSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Create a key; the response's ``key`` is the only time it is shown."""
        body = ApiKeyCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        created = self.make(dict(body.validated_data))
        data = ApiKeyCreatedSerializer(created.key, context={"raw": created.raw}).data
        return Response(data, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})

    @extend_schema(request=None, responses=ApiKeySerializer)
    @action(detail=True, methods=["post"], url_path="revoke")
    def revoke(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Revoke the key at once; it stays listed as revoked. Revoking it again changes nothing."""
        key = api_key_revoke(key=self.get_object(), actor=request.user, ip_address=client_ip(request))
        return Response(ApiKeySerializer(key).data)


class PersonalApiKeyViewSet(_ApiKeyRoutes):
    """The caller's personal keys (they act as the caller, within the caller's organisations)."""

    permission_classes = [HasApiKeyScope, permissions.IsAuthenticated]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        credential = request_credential(request)
        if credential is not None and credential.organization is not None:
            raise exceptions.PermissionDenied(_("An organisation key has no personal keys."))

    def get_queryset(self) -> Any:
        if getattr(self, "swagger_fake_view", False):
            return ApiKey.objects.none()
        return api_key_list_personal(user=self.request.user)

    def key_for(self, pk: Any) -> ApiKey:
        return api_key_get_personal(user=self.request.user, key_id=pk)

    def make(self, data: dict[str, Any]) -> Any:
        return api_key_create(
            name=data["name"],
            scopes=data["scopes"],
            expires_at=data.get("expires_at"),
            owner=self.request.user,
            actor=self.request.user,
            ip_address=client_ip(self.request),
        )


class OrgApiKeyViewSet(OrgScopedViewMixin, _ApiKeyRoutes):
    """The organisation's keys (owners and admins). An organisation key acts as a service user of its
    own, a member of this organisation only: admin with the ``admin`` scope, member otherwise."""

    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]

    def get_base_queryset(self) -> Any:
        return api_key_list_for_org(organization=self.org) if hasattr(self, "org") else ApiKey.objects.none()

    def key_for(self, pk: Any) -> ApiKey:
        return api_key_get_for_org(organization=self.org, key_id=pk)

    def make(self, data: dict[str, Any]) -> Any:
        return api_key_create(
            name=data["name"],
            scopes=data["scopes"],
            expires_at=data.get("expires_at"),
            organization=self.org,
            actor=self.request.user,
            ip_address=client_ip(self.request),
        )
