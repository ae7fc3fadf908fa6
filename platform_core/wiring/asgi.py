"""ASGI entry point: HTTP through Django, websockets through Channels, one ProtocolTypeRouter.

HTTP paths under ``/mcp/orgs/`` go to the agents' MCP servers (:mod:`agents.mcp_endpoint`) and ``/demo-mcp/``
to the demo MCP server (:mod:`connectors.demo.mcp`), both Streamable HTTP on the MCP SDK; every other HTTP
path goes to Django as before.

Websocket handshakes are origin-checked (``WEBSOCKET_ALLOWED_ORIGINS``, else ``ALLOWED_HOSTS``) and then
authenticated by the session cookie or a Bearer token. A path no route serves is closed with 4404.
``platform_core.asgi:application`` names the same application for daphne and process managers.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import ParseResult

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_core.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import OriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import re_path  # noqa: E402

from agents.mcp_endpoint.host import McpHost  # noqa: E402
from agents.mcp_endpoint.http import AgentsMcpApp  # noqa: E402
from agents.mcp_endpoint.server import agents_mcp_server, agents_session_manager  # noqa: E402
from connectors.demo.mcp.server import demo_mcp_server  # noqa: E402
from platform_core.gc_tuning import gc_tune_for_server  # noqa: E402
from platform_core.identity.api_keys.ws_auth import SessionOrTokenAuthMiddleware  # noqa: E402
from platform_core.wiring.routing import websocket_urlpatterns  # noqa: E402
from platform_core.wiring.tracing_setup import tracing_setup  # noqa: E402
from platform_core.wiring.ws_not_found import UnknownPathConsumer  # noqa: E402


def _allowed_origins() -> list[str]:
    if settings.WEBSOCKET_ALLOWED_ORIGINS:
        return list(settings.WEBSOCKET_ALLOWED_ORIGINS)
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG:
        # Development: the ports daphne commonly runs on locally.
        hosts += [".localhost", "127.0.0.1:*", "localhost:*"]
    return hosts


class _PortAwareOriginValidator(OriginValidator):
    """Channels' OriginValidator, also accepting ``host:*`` patterns for local development."""

    def valid_origin(self, parsed_origin: ParseResult | None) -> bool:
        if parsed_origin is None:
            # API clients (no browser) send no Origin: they authenticate with a Bearer token.
            return True
        for pattern in self.allowed_origins:
            if pattern.endswith(":*") and parsed_origin.hostname == pattern[:-2]:
                return True
        return super().valid_origin(parsed_origin)


def build_websocket_app() -> object:
    # Last route: any other path is closed with 4404 (URLRouter itself would raise, and daphne answer 500).
    routes = [*websocket_urlpatterns, re_path(r"", UnknownPathConsumer.as_asgi())]
    return _PortAwareOriginValidator(SessionOrTokenAuthMiddleware(URLRouter(routes)), _allowed_origins())


MCP_AGENTS_PREFIX = "/mcp/orgs/"
DEMO_MCP_PATHS = ("/demo-mcp", "/demo-mcp/")
AsgiApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


class HttpRouter:
    """The MCP paths to their MCP apps, every other HTTP request to Django."""

    def __init__(self, django_app: AsgiApp, agents_mcp: AsgiApp, demo_mcp: AsgiApp) -> None:
        self.django_app = django_app
        self.agents_mcp = agents_mcp
        self.demo_mcp = demo_mcp

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if path.startswith(MCP_AGENTS_PREFIX):
            await self.agents_mcp(scope, receive, send)
        elif path in DEMO_MCP_PATHS:
            await self.demo_mcp(scope, receive, send)
        else:
            await self.django_app(scope, receive, send)


agents_mcp_host = McpHost(agents_mcp_server(), make_manager=agents_session_manager)
demo_mcp_host = McpHost(demo_mcp_server())
http_app = HttpRouter(django_asgi_app, AgentsMcpApp(agents_mcp_host), demo_mcp_host)

application = ProtocolTypeRouter({"http": http_app, "websocket": build_websocket_app()})

# Everything the server needs is loaded now: keep it out of the garbage collector's full scans.
gc_tune_for_server()
tracing_setup()  # OTLP spans of runs when OTEL_EXPORTER_OTLP_ENDPOINT is set; nothing otherwise
