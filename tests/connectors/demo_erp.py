"""The demo ERP API of a live test server as an organisation's connector, imported from its OpenAPI
document (shared by the connector tests that call it over HTTP)."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from connectors.models import Connector
from connectors.services import connector_import_openapi


async def demo_erp_document(live_server_url: str) -> str:
    """The demo API's OpenAPI document, as the server publishes it."""
    async with httpx.AsyncClient() as client:
        return (await client.get(f"{live_server_url}/demo-api/openapi.json")).text


def demo_erp_connector(org, live_server_url: str, document: str):
    """An ``erp`` connector of ``org`` on the live server's demo API, with the document's operations
    imported; returns the connector and the import report (sync: call through ``sync_to_async``)."""
    connector = Connector(
        organization=org,
        name="erp",
        base_url=f"{live_server_url}/demo-api",
        allowed_private_hosts=[urlsplit(live_server_url).hostname],
    )
    connector.save()
    report = connector_import_openapi(connector=connector, document_text=document, actor=None)
    return connector, report
