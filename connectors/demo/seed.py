"""Demo seeder: the demo organisation's "erp" connector, pointing at this platform's own demo API
(:mod:`connectors.demo.api`, which imports nothing of the connectors app but its own models).

The base URL is ``settings.DEMO_API_BASE_URL`` when set, else ``http://127.0.0.1:8000/demo-api`` (where
``make run`` serves); its host is added to the connector's allowed private hosts, since the SSRF guard
refuses loopback addresses otherwise. With ``settings.DEMO_DATABASE_URL`` the organisation also gets a
read-only ``purchasing`` database connector (:mod:`connectors.demo.database`). It always gets the
``erp_mcp`` MCP connector on the platform's demo MCP server (:mod:`connectors.demo.mcp.seed`).
"""

from __future__ import annotations

import json
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction

from connectors.demo.api.document import demo_openapi_document
from connectors.demo.api.models import DemoPurchaseOrder
from connectors.demo.database import demo_database_seed
from connectors.demo.mcp.seed import demo_mcp_connector_seed
from connectors.models import Connector
from connectors.services import connector_import_openapi, connector_save
from platform_core.models import Organization

DEMO_CONNECTOR_NAME = "erp"
DEFAULT_DEMO_API_BASE_URL = "http://127.0.0.1:8000/demo-api"
_DEMO_ORDERS = (
    ("Shenzhen Bright Electronics", "200 LED panels", Decimal("18600.00"), "approved"),
    ("Hangzhou Tea Supply Co.", "Office tea, Q3", Decimal("1280.50"), "draft"),
    ("Nordic Office AB", "Standing desks", Decimal("9400.00"), "draft"),
)


def demo_api_base_url() -> str:
    return str(getattr(settings, "DEMO_API_BASE_URL", "") or DEFAULT_DEMO_API_BASE_URL).rstrip("/")


@transaction.atomic
def demo_connector_seed(org: Organization) -> None:
    """Create or refresh the demo "erp" connector and import the demo API's OpenAPI document."""
    base_url = demo_api_base_url()
    host = urlsplit(base_url).hostname or "127.0.0.1"
    connector = Connector.objects.filter(organization=org, name=DEMO_CONNECTOR_NAME).first()
    if connector is None:
        connector = Connector(
            organization=org,
            name=DEMO_CONNECTOR_NAME,
            description="The demo ERP: purchase orders and payments.",
            base_url=base_url,
            allowed_private_hosts=[host],
        )
        connector_save(connector=connector, actor=None)
    connector_import_openapi(
        connector=connector, document_text=json.dumps(demo_openapi_document(base_url)), actor=None
    )
    demo_mcp_connector_seed(org, demo_api_base_url=base_url)
    demo_database_url: str | None = getattr(settings, "DEMO_DATABASE_URL", "")
    if demo_database_url:
        demo_database_seed(org, demo_database_url)
    if not DemoPurchaseOrder.objects.exists():
        for supplier, description, amount, status in _DEMO_ORDERS:
            order = DemoPurchaseOrder.objects.create(
                number="pending", supplier=supplier, description=description, amount=amount, status=status
            )
            order.number = f"PO-{order.pk:04d}"
            order.save(update_fields=["number"])
