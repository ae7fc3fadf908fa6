"""Agents served over MCP: ``/mcp/orgs/<slug>/`` (Streamable HTTP), one MCP tool per exposed agent.

``caller`` authenticates the Bearer key and the organisation, ``tools`` lists an organisation's exposed
agents as MCP tools, ``bridge`` runs an agent for a tool call through the platform's run machinery (the
same runs, guard rails, call log and history as the chat), ``server`` is the SDK's low-level MCP server
with those handlers, and ``host`` runs the SDK's session manager inside whichever ASGI server serves it.
"""
