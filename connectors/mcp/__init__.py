"""MCP servers as connectors: the official ``mcp`` SDK as the client, behind the platform's guard rails.

- :mod:`.config`: a connector row to the plain :class:`~.config.McpConfig` (decrypted credentials).
- :mod:`.transport`: the SDK's httpx2 client on the SSRF-guarded transport, with the connector's auth.
- :mod:`.pool`: one initialised session per connector and event loop, re-opened when the server drops it.
- :mod:`.client`: ``tools/list`` and ``tools/call`` with timeouts, as typed outcomes.
- :mod:`.results`: a ``CallToolResult`` as what the model reads and what the tool card shows.
- :mod:`.sync`: "Sync tools": the server's tools as connector actions (added, changed, removed).
- :mod:`.trust`: what the server claims about a tool, and why a tool is a write until an admin confirms it
  as a read (:mod:`.confirm`).
- :mod:`.lookalikes`: tools that look like another connector's.
- :mod:`.kind`: the MCP kind of connector (:mod:`connectors.kinds`).
"""
