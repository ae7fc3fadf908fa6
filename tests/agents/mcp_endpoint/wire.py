"""The raw MCP requests the endpoint tests send without the SDK: ``initialize`` and the headers the
Streamable HTTP transport asks of every POST."""

from __future__ import annotations

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
