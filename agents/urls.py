"""Web routes of the chat app, mounted under ``o/<slug:org_slug>/`` by ``platform_core.wiring.urls``."""

from __future__ import annotations

from django.urls import path

from agents import views

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
]
