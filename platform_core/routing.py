"""The websocket route table. Each app contributes its routes here; the URL meta-test walks it."""

from __future__ import annotations

from typing import Any

websocket_urlpatterns: list[Any] = []
