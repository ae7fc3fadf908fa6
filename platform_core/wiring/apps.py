from __future__ import annotations

from django.apps import AppConfig


class WiringConfig(AppConfig):
    """Installed so that Django finds the ``serve`` and ``serve_prod`` commands here; it has no models."""

    name = "platform_core.wiring"
    label = "wiring"
