"""Web routes of the chat app, mounted under ``o/<slug:org_slug>/`` by ``platform_core.wiring.urls``."""

from __future__ import annotations

from django.urls import path

from agents import views
from agents.memory import pages as memory_pages  # a person's memories (issue 36)

urlpatterns = [
    path("chat/", views.chat_home, name="chat-home"),
    path("chat/new/", views.chat_new, name="chat-new"),
    path("chat/<uuid:conversation_id>/", views.chat_conversation, name="chat-conversation"),
    path(
        "knowledge/documents/<uuid:document_id>/download/",
        views.knowledge_document_file,
        name="knowledge-document-file",
    ),
    path("attachments/<uuid:attachment_id>/download/", views.attachment_file, name="attachment-file"),
    path("memories/", memory_pages.memories_page, name="memories-page"),
    path("memories/add/", memory_pages.memory_add, name="memories-add"),
    path("memories/<uuid:memory_id>/edit/", memory_pages.memory_edit, name="memories-edit"),
    path("memories/<uuid:memory_id>/delete/", memory_pages.memory_remove, name="memories-delete"),
]
