"""Deeply nested JSON to the MCP endpoint is a JSON-RPC parse error (400), never a 500, and the endpoint
keeps serving (security issue #31 asked every JSON entry point to be checked: the SDK's decoder, pydantic's,
bounds its own recursion)."""

from __future__ import annotations

import httpx2
import pytest
from channels.db import database_sync_to_async

from tests.agents.mcp_endpoint.test_endpoint import _world
from tests.agents.mcp_endpoint.wire import INITIALIZE, MCP_HEADERS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("depth", [900, 5000, 100_000])
async def test_deeply_nested_json_is_a_parse_error_and_the_endpoint_keeps_serving(
    daphne_url, scripted_llm, depth
):
    world = await database_sync_to_async(_world)(scripted_llm.base_url, "http://127.0.0.1:9")
    url = f"{daphne_url}/mcp/orgs/{world.slug}/"
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {world.key}"}
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": '
        + '{"a":' * depth
        + "1"
        + "}" * depth
        + "}"
    )

    async with httpx2.AsyncClient(timeout=20) as http:
        refused = await http.post(url, content=body, headers=headers)
        served = await http.post(url, json=INITIALIZE, headers=headers)

    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == -32700  # JSON-RPC "Parse error"
    assert served.status_code == 200
