"""Websocket routes of the agents app."""

from __future__ import annotations

from django.urls import path

from agents.consumers import ConversationConsumer

websocket_urlpatterns = [
    path("ws/conversations/<str:conversation_id>/", ConversationConsumer.as_asgi(), name="ws-conversation"),
]
