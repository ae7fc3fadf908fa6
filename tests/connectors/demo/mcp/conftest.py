"""The live daphne server of the MCP endpoint tests."""

from tests.agents.mcp_endpoint.live import daphne_url  # noqa: F401 (a fixture)
