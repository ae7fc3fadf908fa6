"""Issue #31, finding 3: the client reads at most the connector's limit of an MCP server's answer
(a 30 MB result is not read whole: the server sees the connection closed after a few MB), and no
stream to the server stays open once the calls that used it ended or were cancelled."""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from connectors.mcp.client import mcp_call_tool
from connectors.mcp.config import McpConfig
from tests.fakes.mcp_servers import RawAnswer

HUGE = 30 * 1024 * 1024


def _config(server, **extra) -> McpConfig:
    return McpConfig(
        connector_id="c-streams",
        transport=extra.pop("transport", "streamable_http"),
        url=extra.pop("url", server.url),
        allowed_private_hosts=("127.0.0.1",),
        **extra,
    )


async def _eventually(check, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


async def test_a_30_mb_result_is_read_only_up_to_the_limit_and_its_response_closed(mcp_server):
    text = "x" * HUGE
    answer = RawAnswer(json.dumps({"content": [{"type": "text", "text": text}], "isError": False}).encode())
    mcp_server.raw_answers["tools/call:huge"] = answer
    config = _config(mcp_server, max_response_bytes=1_000_000)

    called = await mcp_call_tool(config, "huge", {}, is_write=False)

    assert called.outcome.status == "error"
    assert f"larger than {config.max_answer_bytes} bytes" in called.outcome.error
    assert called.outcome.response_bytes == config.max_answer_bytes
    assert await _eventually(answer.disconnected.is_set)  # the client closed the response
    # What the server handed over before the close: the limit plus what the sockets buffer, not 30 MB.
    assert answer.sent < 12 * 1024 * 1024, answer.sent
    assert len(mcp_server.calls) == 0  # (the raw answer stood in for the tool; the SDK never ran it)


async def test_a_result_over_the_limit_on_an_event_stream_is_refused_without_a_retry(mcp_server):
    config = _config(mcp_server, max_response_bytes=10_000)
    called = await mcp_call_tool(config, "big", {"size": 500_000}, is_write=False)
    assert called.outcome.status == "error" and "larger than" in called.outcome.error
    assert len(mcp_server.calls_of("big")) == 1  # a read, yet not sent again


async def test_a_hanging_call_cancelled_with_its_run_leaves_no_stream_open_on_the_server(
    mcp_server, settings
):
    settings.MCP_SESSION_IDLE_SECONDS = 0.2
    config = _config(mcp_server, read_timeout=30)
    call = asyncio.create_task(mcp_call_tool(config, "sleep", {"seconds": 60}, is_write=False))
    assert await _eventually(lambda: mcp_server.calls_of("sleep"))
    assert {m for m, _p in mcp_server.open_requests.values()} == {"GET", "POST"}  # event stream + call

    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call

    assert await _eventually(lambda: not mcp_server.open_requests), mcp_server.open_requests


async def test_a_session_is_reused_by_calls_close_together_and_closed_when_idle(mcp_server, settings):
    settings.MCP_SESSION_IDLE_SECONDS = 0.5
    config = _config(mcp_server)
    for order in ("1", "2"):
        called = await mcp_call_tool(config, "lookup_order", {"order_id": order}, is_write=False)
        assert called.outcome.status == "ok"
    initialises = [p for m, p, h in mcp_server.requests if m == "POST" and "mcp-session-id" not in h]
    assert len(initialises) == 1
    assert await _eventually(lambda: not mcp_server.open_requests), mcp_server.open_requests
