"""The agents' MCP endpoint reads request bodies as large as one message's files base64-encoded (the SDK's
own cap, 4 MiB, would refuse a single large attachment), and no larger: its cap follows the attachment
limits in force."""

from __future__ import annotations

import json

import httpx2
import pytest

from agents.mcp_endpoint.attachments import BODY_ROOM_BYTES, request_body_limit
from agents.mcp_endpoint.host import McpHost
from agents.mcp_endpoint.server import agents_mcp_server, agents_session_manager
from tests.agents.mcp_endpoint.wire import INITIALIZE, MCP_HEADERS

pytestmark = pytest.mark.django_db(transaction=True)

MIB = 1024 * 1024


def _padded_initialize(size: int) -> bytes:
    """An ``initialize`` request of ``size`` bytes (JSON allows the trailing spaces)."""
    body = json.dumps(INITIALIZE).encode()
    return body + b" " * (size - len(body))


async def _post(body: bytes) -> httpx2.Response:
    host = McpHost(agents_mcp_server(), make_manager=agents_session_manager)
    try:
        transport = httpx2.ASGITransport(app=host)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return await http.post("/mcp/orgs/acme/", content=body, headers=MCP_HEADERS)
    finally:
        await host.aclose()


def test_the_cap_is_a_messages_files_in_base64_and_room_for_the_rest(settings):
    settings.ATTACHMENT_MAX_FILE_BYTES = 20 * MIB
    settings.ATTACHMENT_MAX_MESSAGE_BYTES = 30 * MIB
    assert request_body_limit() == 40 * MIB + BODY_ROOM_BYTES

    settings.ATTACHMENT_MAX_MESSAGE_BYTES = 3 * MIB  # a single file may be larger than a message's share
    assert request_body_limit() == 4 * ((20 * MIB + 2) // 3) + BODY_ROOM_BYTES


async def test_a_body_over_the_sdks_default_cap_is_read_with_the_default_limits():
    response = await _post(_padded_initialize(5 * MIB))

    assert response.status_code == 200, response.text[:200]
    assert '"serverInfo"' in response.text


async def test_a_body_over_the_cap_is_refused_with_413(settings):
    settings.ATTACHMENT_MAX_FILE_BYTES = 3 * MIB
    settings.ATTACHMENT_MAX_MESSAGE_BYTES = 3 * MIB

    response = await _post(_padded_initialize(4 * MIB + BODY_ROOM_BYTES + 1))

    assert response.status_code == 413
