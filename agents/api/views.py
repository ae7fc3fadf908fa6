"""REST endpoints of the agents app, all under ``/api/v1/orgs/<org_slug>/``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, mixins, permissions, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from agents import selectors, services
from agents.api.serializers import (
    AgentSerializer,
    ApplyCheckSerializer,
    ConversationRenameSerializer,
    ConversationSerializer,
    EndpointCheckReportSerializer,
    MessageSerializer,
    ModelConfigSerializer,
    ModelPresetSerializer,
    RunEventSerializer,
)
from agents.attachments.selectors import attachments_of_messages
from agents.endpoint_check_services import model_config_apply_check, model_config_check
from agents.memory.connector import agent_memory_ready
from agents.model_presets import presets_as_data
from agents.models import Agent, Conversation, Message, ModelConfig, RunEvent
from platform_core.api.audited import AuditedWritesMixin
from platform_core.identity.api_keys.scopes import Scope
from platform_core.request_meta import client_ip
from platform_core.tenancy.scoping import IsOrgAdmin, IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


class ModelConfigViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's model endpoints (admins only; API keys and header values are write-only; writes
    audited). ``check`` runs "Check endpoint" and stores its report; ``apply-check`` sets the abilities to
    those the last check found."""

    queryset = ModelConfig.objects.all()
    serializer_class = ModelConfigSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]

    @extend_schema(request=None, responses=EndpointCheckReportSerializer)
    @action(detail=True, methods=["post"])
    def check(self, request: Any, *args: Any, **kwargs: Any) -> Response:
        report = model_config_check(
            config=self.get_object(), actor=request.user, ip_address=client_ip(request)
        )
        return Response(EndpointCheckReportSerializer(report.as_data()).data)

    @extend_schema(request=None, responses=ApplyCheckSerializer)
    @action(detail=True, methods=["post"], url_path="apply-check")
    def apply_check(self, request: Any, *args: Any, **kwargs: Any) -> Response:
        config = self.get_object()
        if not config.last_check:
            raise Conflict(_("Check the endpoint first."))
        changed = model_config_apply_check(config=config, actor=request.user, ip_address=client_ip(request))
        data = {"changed": changed, "model_config": self.get_serializer(config).data}
        return Response(data)


class ModelPresetListView(generics.GenericAPIView):
    """The endpoint presets per provider (read-only, for any signed-in user): base URL pattern, abilities,
    context window and output limit per model family, API version and key header."""

    permission_classes = [permissions.IsAuthenticated]
    serializer_class = ModelPresetSerializer
    pagination_class = None

    @extend_schema(responses=ModelPresetSerializer(many=True))
    def get(self, request: Any) -> Response:
        return Response(ModelPresetSerializer(presets_as_data(), many=True).data)


class AgentViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """Agents: members list the active ones; admins manage all (writes audited)."""

    queryset = Agent.objects.all()
    serializer_class = AgentSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        super().perform_create(serializer)
        agent_memory_ready(serializer.instance, actor=self.request.user)

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        super().perform_update(serializer)
        agent_memory_ready(serializer.instance, actor=self.request.user)

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = queryset.prefetch_related("connectors", "skills")
        membership = getattr(self.request, "org_membership", None)
        if not self.request.user.is_superuser and (membership is None or not membership.is_admin):
            queryset = queryset.filter(active=True)
        return queryset


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter(
                "search", OpenApiTypes.STR, description="Words that the title or the agent's name contain"
            )
        ]
    )
)
class ConversationViewSet(
    OrgScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The caller's own conversations in the organisation: start, list (``?search=``), rename, delete."""

    queryset = Conversation.objects.select_related("agent")
    serializer_class = ConversationSerializer
    api_key_write_scope = Scope.CHAT
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = queryset.filter(user=self.request.user)
        if self.action == "list":
            queryset = selectors.conversation_search(queryset, self.request.query_params.get("search", ""))
        return queryset

    def get_serializer_class(self) -> type[serializers.BaseSerializer]:
        if self.action in ("update", "partial_update"):
            return ConversationRenameSerializer
        return ConversationSerializer

    def perform_update(self, serializer: serializers.BaseSerializer) -> None:
        try:
            services.conversation_rename(
                conversation=serializer.instance, title=serializer.validated_data.get("title", "")
            )
        except services.RunRefused as refused:
            raise ValidationError({"title": [refused.message]}) from refused

    def update(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        super().update(request, *args, **kwargs)
        return Response(ConversationSerializer(self.get_object(), context=self.get_serializer_context()).data)

    def perform_destroy(self, instance: Conversation) -> None:
        try:
            services.conversation_delete(conversation=instance)
        except services.RunRefused as refused:
            raise Conflict(refused.message) from refused

    def perform_create(self, serializer: serializers.BaseSerializer) -> None:
        try:
            serializer.instance = services.conversation_create(
                organization=self.org,
                user=self.request.user,
                agent=serializer.validated_data["agent"],
                title=serializer.validated_data.get("title", ""),
            )
        except services.RunRefused as refused:
            raise ValidationError({"agent": [refused.message]}) from refused


class _ConversationChildMixin(OrgScopedViewMixin):
    """Rows that belong to one of the caller's conversations (found by the URL's conversation id)."""

    org_field = "conversation__organization"
    api_key_write_scope = Scope.CHAT
    # Set by the DRF view this mixin is combined with.
    request: Request
    kwargs: dict[str, Any]

    def conversation(self) -> Conversation:
        return get_object_or_404(
            Conversation.objects.for_org(self.org), pk=self.kwargs["conversation_id"], user=self.request.user
        )

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset.filter(conversation=self.conversation())


class MessageViewSet(_ConversationChildMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The conversation's messages in order: questions, answers, follow-ups, summaries; each with the files
    sent with it."""

    queryset = Message.objects.order_by("id")
    serializer_class = MessageSerializer

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(queryset)
        messages = list(page if page is not None else queryset)
        # One query for the page's attachments, whatever the number of messages.
        attachments = attachments_of_messages(
            organization_id=self.org.pk, message_ids=[message.pk for message in messages]
        )
        context = {**self.get_serializer_context(), "attachments": attachments}
        data = self.get_serializer(messages, many=True, context=context).data
        return self.get_paginated_response(data) if page is not None else Response(data)


class RunEventViewSet(_ConversationChildMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The persisted event stream, for replay: frames with ``seq > after_seq`` in order."""

    queryset = RunEvent.objects.order_by("seq")
    serializer_class = RunEventSerializer

    @extend_schema(
        parameters=[OpenApiParameter("after_seq", OpenApiTypes.INT, description="replay after this seq")]
    )
    def list(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        return super().list(request, *args, **kwargs)

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = super().filter_org_queryset(queryset)
        raw = self.request.query_params.get("after_seq", "0")
        try:
            after = int(raw)
        except ValueError as exc:
            raise ValidationError({"after_seq": [_("Give a whole number.")]}) from exc
        return queryset.filter(seq__gt=after)
