"""The MCP host runs the SDK's session manager itself (no ASGI lifespan needed, as under daphne), once per
event loop: each test's new loop gets a new manager, and ``aclose`` ends it."""

from __future__ import annotations

import httpx2
import pytest

from agents.mcp_endpoint.host import McpHost
from connectors.demo.mcp.server import demo_mcp_server
from tests.agents.mcp_endpoint.wire import INITIALIZE, MCP_HEADERS

pytestmark = pytest.mark.django_db(transaction=True)


HOST = McpHost(demo_mcp_server())  # shared by the tests below, each on its own event loop


async def _initialize() -> httpx2.Response:
    transport = httpx2.ASGITransport(app=HOST)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        return await http.post("/demo-mcp/", json=INITIALIZE, headers=MCP_HEADERS)


@pytest.mark.parametrize("loop_number", [1, 2])
async def test_the_host_serves_without_a_lifespan_on_every_event_loop(loop_number):
    try:
        response = await _initialize()
        assert response.status_code == 200, response.text
        assert response.headers["mcp-session-id"]
        assert '"serverInfo"' in response.text and "demo-erp" in response.text
    finally:
        await HOST.aclose()
