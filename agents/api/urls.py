"""The agents app's org-scoped API routes (mounted under ``/api/v1/orgs/<org_slug>/``)."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from agents.api.async_drf import async_view
from agents.api.http_chat import ConversationMessagesViewSet, RunCancelView, RunStreamView
from agents.api.openai_compat import ChatCompletionsView, ModelListView, OrgAgentChatCompletionsView
from agents.api.usage_dashboard import UsageDashboardView  # usage dashboard (issue 21)
from agents.api.views import (
    AgentViewSet,
    ConversationViewSet,
    ModelConfigViewSet,
    ModelPresetListView,
    RunEventViewSet,
)
from agents.usage.api.views import BudgetViewSet

router = SimpleRouter()
router.register("model-configs", ModelConfigViewSet, basename="model-config")
router.register("agents", AgentViewSet, basename="agent")
router.register("conversations", ConversationViewSet, basename="conversation")
router.register("budgets", BudgetViewSet, basename="budget")

urlpatterns = [
    path("", include(router.urls)),
    path("usage/", UsageDashboardView.as_view(), name="org-usage"),
    path(
        "conversations/<uuid:conversation_id>/messages/",
        async_view(ConversationMessagesViewSet.as_view({"get": "list", "post": "create"})),
        name="conversation-messages",
    ),
    path(
        "conversations/<uuid:conversation_id>/runs/<uuid:run_id>/stream/",
        async_view(RunStreamView.as_view()),
        name="conversation-run-stream",
    ),
    path(
        "conversations/<uuid:conversation_id>/runs/<uuid:run_id>/cancel/",
        async_view(RunCancelView.as_view()),
        name="conversation-run-cancel",
    ),
    path(
        "agents/<uuid:agent_id>/chat/completions",
        async_view(OrgAgentChatCompletionsView.as_view()),
        name="agent-chat-completions",
    ),
    path(
        "conversations/<uuid:conversation_id>/events/",
        RunEventViewSet.as_view({"get": "list"}),
        name="conversation-events",
    ),
]

# Outside any organisation (mounted at ``/api/v1/``).
public_urlpatterns = [path("model-presets/", ModelPresetListView.as_view(), name="model-presets")]

# The OpenAI-compatible form (mounted at ``/v1/``, where OpenAI clients look): the agent is the model.
openai_urlpatterns = [
    path("chat/completions", async_view(ChatCompletionsView.as_view()), name="openai-chat-completions"),
    path("models", ModelListView.as_view(), name="openai-models"),
]
