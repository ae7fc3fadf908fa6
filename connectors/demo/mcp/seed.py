"""Demo seeder: the demo organisation's ``erp_mcp`` connector, an MCP connector on this platform's own
demo MCP server (:mod:`connectors.demo.mcp`, served under ``/demo-mcp/``).

The server's URL is the origin of the demo API's base URL (``settings.DEMO_API_BASE_URL``, where ``make
run`` serves) with ``/demo-mcp/``; its host is added to the connector's allowed private hosts, since the
SSRF guard refuses loopback addresses otherwise. The actions are the demo server's tools, stored by the
MCP connector's own "Sync tools" service from the server's tool listing, so seeding needs no running
server; the read tool is confirmed as a read (audited, with no actor).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.db import transaction

from connectors.demo.mcp.server import TOOLS
from connectors.mcp.confirm import mcp_action_confirm_read
from connectors.mcp.sync import connector_apply_mcp_tools
from connectors.models import Connector, ConnectorAction, ConnectorKind, McpTransport
from connectors.services import connector_save
from platform_core.models import Organization

DEMO_MCP_CONNECTOR_NAME = "erp_mcp"
DEMO_MCP_PATH = "/demo-mcp/"
# The demo server is the platform's own code, so the seed confirms its read tool as a read (an admin
# does this for any other server's tools: an MCP server's annotations alone are not trusted).
DEMO_MCP_READ_TOOLS = ("find_purchase_orders",)


def demo_mcp_url(demo_api_base_url: str) -> str:
    """``http://127.0.0.1:8000/demo-api`` → ``http://127.0.0.1:8000/demo-mcp/``."""
    parts = urlsplit(demo_api_base_url)
    return f"{parts.scheme}://{parts.netloc}{DEMO_MCP_PATH}"


@transaction.atomic
def demo_mcp_connector_seed(org: Organization, *, demo_api_base_url: str) -> Connector:
    """Create the demo MCP connector (idempotent) and store the demo server's tools as its actions."""
    url = demo_mcp_url(demo_api_base_url)
    connector = Connector.objects.filter(organization=org, name=DEMO_MCP_CONNECTOR_NAME).first()
    if connector is None:
        connector = Connector(
            organization=org,
            name=DEMO_MCP_CONNECTOR_NAME,
            kind=ConnectorKind.MCP,
            mcp_transport=McpTransport.STREAMABLE_HTTP,
            description="The demo ERP as an MCP server: find purchase orders, create purchase requests.",
            base_url=url,
            allowed_private_hosts=[urlsplit(url).hostname or "127.0.0.1"],
        )
        connector_save(connector=connector, actor=None)
    connector_apply_mcp_tools(connector=connector, tools=tuple(TOOLS), actor=None)
    for action in ConnectorAction.objects.filter(connector=connector, mcp_tool__in=DEMO_MCP_READ_TOOLS):
        mcp_action_confirm_read(action=action, actor=None)
    return connector
