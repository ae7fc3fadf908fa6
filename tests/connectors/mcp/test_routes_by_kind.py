"""Issue #31, finding 5: ``GET …/connectors/<id>/actions/`` and ``POST …/connectors/<id>/sync-tools/``
answer every connector kind, with every body, with a 2xx or a 4xx that says why (502 only when a
server was asked and failed), never a 500."""

from __future__ import annotations

import pytest

from connectors.models import Connector, ConnectorAction
from tests.connectors.mcp.conftest import mcp_connector
from tests.factories import ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db

KINDS = ["http", "postgresql", "mysql", "mcp", "mcp_sse", "mcp_stdio_refused", "mcp_inactive"]
BODIES = {
    "none": None,
    "object": {"tools": "all"},
    "list": [1, 2],
    "text": "sync please",
}


def _connector(kind: str, org, server) -> Connector:
    if kind == "http":
        connector = ConnectorFactory(organization=org, name="crm")
        ConnectorActionFactory(connector=connector)
        return connector
    if kind in ("postgresql", "mysql"):
        scheme = "postgresql" if kind == "postgresql" else "mysql"
        return ConnectorFactory(
            organization=org,
            name="db",
            kind="database",
            engine=kind,
            base_url="",
            dsn=f"{scheme}://reader:secret-pw@db.example.com/sales",
        )
    if kind == "mcp_sse":
        return mcp_connector(org, f"{server.base_url}/sse", mcp_transport="sse")
    if kind == "mcp_stdio_refused":
        connector = mcp_connector(org, "", mcp_transport="stdio", mcp_command=["mcp-server-time"])
        Connector.objects.unscoped().filter(pk=connector.pk).update(mcp_command=["/bin/sh", "-c", "id"])
        return connector
    return mcp_connector(org, server.url, is_active=kind != "mcp_inactive")


def _url(org, connector, route):
    return f"/api/v1/orgs/{org.slug}/connectors/{connector.pk}/{route}/"


@pytest.mark.parametrize("kind", KINDS)
def test_the_actions_list_answers_for_every_connector_kind(client_for, org, org_admin, mcp_server, kind):
    connector = _connector(kind, org, mcp_server)
    response = client_for(org_admin).get(_url(org, connector, "actions"))
    assert response.status_code == 200, response.content
    assert response.json()["count"] == ConnectorAction.objects.unscoped().filter(connector=connector).count()


@pytest.mark.parametrize("body", list(BODIES), ids=list(BODIES))
@pytest.mark.parametrize("kind", KINDS)
def test_sync_tools_answers_every_connector_kind_and_body_with_a_clear_status(
    client_for, org, org_admin, mcp_server, kind, body
):
    connector = _connector(kind, org, mcp_server)
    response = client_for(org_admin).post(_url(org, connector, "sync-tools"), BODIES[body], format="json")
    if kind in ("http", "postgresql", "mysql"):
        assert response.status_code == 400
        assert response.json() == {"non_field_errors": ["Only MCP connectors have tools to sync."]}
    elif kind == "mcp_stdio_refused":
        assert response.status_code == 400
        assert "MCP_STDIO_ALLOWED_COMMANDS" in response.json()["error"]
    else:
        assert response.status_code == 200, response.content
        assert "lookup_order" in response.json()["added"]


@pytest.mark.parametrize("kind", KINDS)
def test_sync_tools_with_a_malformed_json_body_is_not_a_500(client_for, org, org_admin, mcp_server, kind):
    connector = _connector(kind, org, mcp_server)
    response = client_for(org_admin).post(
        _url(org, connector, "sync-tools"), "{not json", content_type="application/json"
    )
    assert response.status_code in (200, 400), response.content
