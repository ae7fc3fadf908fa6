"""REST endpoints of the agents app, all under ``/api/v1/orgs/<org_slug>/``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, permissions, serializers, viewsets
from rest_framework.exceptions import ValidationError

from agents import services
from agents.api.serializers import (
    AgentSerializer,
    ConversationSerializer,
    MessageSerializer,
    ModelConfigSerializer,
    RunEventSerializer,
)
from agents.models import Agent, Conversation, Message, ModelConfig, RunEvent
from platform_core.api.audited import AuditedWritesMixin
from platform_core.tenancy import IsOrgAdmin, IsOrgAdminOrReadOnly, IsOrgMember, OrgScopedViewMixin


class ModelConfigViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """The organisation's model endpoints (admins only; API keys are write-only; writes audited)."""

    queryset = ModelConfig.objects.all()
    serializer_class = ModelConfigSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdmin]


class AgentViewSet(AuditedWritesMixin, OrgScopedViewMixin, viewsets.ModelViewSet):
    """Agents: members list the active ones; admins manage all (writes audited)."""

    queryset = Agent.objects.all()
    serializer_class = AgentSerializer
    permission_classes = [permissions.IsAuthenticated, IsOrgMember, IsOrgAdminOrReadOnly]

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        queryset = queryset.prefetch_related("connectors")
        membership = getattr(self.request, "org_membership", None)
        if not self.request.user.is_superuser and (membership is None or not membership.is_admin):
            queryset = queryset.filter(active=True)
        return queryset


class ConversationViewSet(
    OrgScopedViewMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """The caller's own conversations in the organisation."""

    queryset = Conversation.objects.select_related("agent")
    serializer_class = ConversationSerializer

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset.filter(user=self.request.user)

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

    def conversation(self) -> Conversation:
        return get_object_or_404(
            Conversation, pk=self.kwargs["conversation_id"], organization=self.org, user=self.request.user
        )

    def filter_org_queryset(self, queryset: QuerySet) -> QuerySet:
        return queryset.filter(conversation=self.conversation())


class MessageViewSet(_ConversationChildMixin, mixins.ListModelMixin, viewsets.GenericViewSet):
    """The conversation's messages in order: questions, answers, injected follow-ups, summaries."""

    queryset = Message.objects.order_by("id")
    serializer_class = MessageSerializer


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
