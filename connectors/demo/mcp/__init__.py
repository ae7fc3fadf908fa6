"""The demo MCP server: the demo ERP's purchase orders behind MCP tools, served by the platform itself
under ``/demo-mcp/`` (Streamable HTTP) so the offline demo has an MCP connector to call.

Like the demo API (:mod:`connectors.demo.api`) it stands in for an organisation's own system and asks
for no credentials; agents reach it over HTTP through an MCP connector like any other MCP server.
"""
