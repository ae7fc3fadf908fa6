"""Content negotiation of the views that answer with an event stream.

DRF refuses (406) a request whose ``Accept`` names no renderer of the view, before the view runs; every
browser's ``EventSource`` sends ``Accept: text/event-stream``, and so do many OpenAI clients when they
stream. These views answer their success with a stream of their own (not a DRF ``Response``), so the
renderer only ever renders errors: always JSON, whatever the client accepts.
"""

from __future__ import annotations

from typing import Any

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer, JSONRenderer


class EventStreamNegotiation(DefaultContentNegotiation):
    """Accept any ``Accept``: errors are rendered as JSON."""

    def select_renderer(
        self, request: Any, renderers: list[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next((r for r in renderers if isinstance(r, JSONRenderer)), renderers[0])
        return renderer, str(renderer.media_type)
