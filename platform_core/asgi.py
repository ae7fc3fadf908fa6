"""``platform_core.asgi:application``: the name the README's daphne command and process managers use.

The ASGI application is built in :mod:`platform_core.wiring.asgi`; this module only keeps that name.
"""

from __future__ import annotations

from platform_core.wiring.asgi import application

__all__ = ["application"]
