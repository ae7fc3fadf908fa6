"""The agents app's org-scoped API routes (mounted under ``/api/v1/orgs/<org_slug>/``)."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from agents.api.views import (
    AgentViewSet,
    ConversationViewSet,
    MessageViewSet,
    ModelConfigViewSet,
    ModelPresetListView,
    RunEventViewSet,
)

router = SimpleRouter()
router.register("model-configs", ModelConfigViewSet, basename="model-config")
router.register("agents", AgentViewSet, basename="agent")
router.register("conversations", ConversationViewSet, basename="conversation")

urlpatterns = [
    path("", include(router.urls)),
    path(
        "conversations/<uuid:conversation_id>/messages/",
        MessageViewSet.as_view({"get": "list"}),
        name="conversation-messages",
    ),
    path(
        "conversations/<uuid:conversation_id>/events/",
        RunEventViewSet.as_view({"get": "list"}),
        name="conversation-events",
    ),
]

# Outside any organisation (mounted at ``/api/v1/``).
public_urlpatterns = [path("model-presets/", ModelPresetListView.as_view(), name="model-presets")]
