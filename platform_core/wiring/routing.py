"""The websocket route table. Each app contributes its routes here; the URL meta-test walks it."""

from __future__ import annotations

from typing import Any

from agents.routing import websocket_urlpatterns as agents_websocket_urlpatterns

websocket_urlpatterns: list[Any] = [*agents_websocket_urlpatterns]
