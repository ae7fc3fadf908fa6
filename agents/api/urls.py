"""The agents app's org-scoped API routes (mounted under ``/api/v1/orgs/<org_slug>/``)."""

from __future__ import annotations

from django.urls import include, path
from rest_framework.routers import SimpleRouter

from agents.api.async_drf import async_view
from agents.api.attachments import AttachmentViewSet  # chat attachments (issue 35)
from agents.api.http_chat import ConversationMessagesViewSet, RunCancelView, RunStreamView
from agents.api.knowledge import KnowledgeBaseViewSet, KnowledgeDocumentViewSet  # knowledge bases (issue 34)
from agents.api.memories import MemoryViewSet  # a person's memories (issue 36)
from agents.api.openai_compat import ChatCompletionsView, ModelListView, OrgAgentChatCompletionsView
from agents.api.skills import SkillViewSet  # skills (issue 36)
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
router.register("skills", SkillViewSet, basename="skill")
router.register("memories", MemoryViewSet, basename="memory")

_knowledge_bases = KnowledgeBaseViewSet.as_view({"get": "list", "post": "create"})
_knowledge_base = KnowledgeBaseViewSet.as_view(
    {"get": "retrieve", "patch": "partial_update", "delete": "destroy"}
)
_documents = KnowledgeDocumentViewSet.as_view({"get": "list", "post": "create"})
_document = KnowledgeDocumentViewSet.as_view({"get": "retrieve", "delete": "destroy"})
_document_reindex = KnowledgeDocumentViewSet.as_view(
    {"post": "reindex"}, **KnowledgeDocumentViewSet.reindex.kwargs
)
_document_download = KnowledgeDocumentViewSet.as_view(
    {"get": "download"}, **KnowledgeDocumentViewSet.download.kwargs
)
_document_from_url = KnowledgeDocumentViewSet.as_view({"post": "from_url"})
_KB = "knowledge-bases/<uuid:knowledge_base_id>"
_attachments = AttachmentViewSet.as_view({"get": "list", "post": "create"})
_attachment = AttachmentViewSet.as_view({"get": "retrieve", "delete": "destroy"})
_attachment_download = AttachmentViewSet.as_view({"get": "download"}, **AttachmentViewSet.download.kwargs)

urlpatterns = [
    path("", include(router.urls)),
    path("knowledge-bases/", _knowledge_bases, name="knowledge-base-list"),
    path("knowledge-bases/<uuid:pk>/", _knowledge_base, name="knowledge-base-detail"),
    path(f"{_KB}/documents/", _documents, name="knowledge-document-list"),
    path(f"{_KB}/documents/from-url/", _document_from_url, name="knowledge-document-from-url"),
    path(f"{_KB}/documents/<uuid:pk>/", _document, name="knowledge-document-detail"),
    path(f"{_KB}/documents/<uuid:pk>/reindex/", _document_reindex, name="knowledge-document-reindex"),
    path(f"{_KB}/documents/<uuid:pk>/download/", _document_download, name="knowledge-document-download"),
    path("attachments/", _attachments, name="attachment-list"),
    path("attachments/<uuid:pk>/", _attachment, name="attachment-detail"),
    path("attachments/<uuid:pk>/download/", _attachment_download, name="attachment-download"),
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
