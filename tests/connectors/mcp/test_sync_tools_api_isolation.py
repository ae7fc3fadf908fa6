"""The "Sync tools" API action is out of reach of another organisation: its admin gets a 404 whether the
URL names the connector's organisation or their own, the MCP server is never called and the connector's
actions and sync state stay as they were."""

from __future__ import annotations

import pytest

from connectors.models import ConnectorAction
from tests.connectors.mcp.conftest import mcp_connector

pytestmark = pytest.mark.django_db


def _sync_url(slug: str, pk: object) -> str:
    return f"/api/v1/orgs/{slug}/connectors/{pk}/sync-tools/"


@pytest.mark.cross_org("connector-sync-tools")
def test_an_admin_of_another_organisation_cannot_sync_the_tools_of_a_connector(
    client_for, org, other_org, other_admin, mcp_server
):
    connector = mcp_connector(org, mcp_server.url)
    before = connector.__class__.objects.for_org(org).values().get(pk=connector.pk)
    outsider = client_for(other_admin)

    assert outsider.post(_sync_url(org.slug, connector.pk), format="json").status_code == 404
    assert outsider.post(_sync_url(other_org.slug, connector.pk), format="json").status_code == 404

    assert mcp_server.requests == []
    assert not ConnectorAction.objects.unscoped().filter(connector=connector).exists()
    assert connector.__class__.objects.for_org(org).values().get(pk=connector.pk) == before


def test_the_same_sync_by_the_connectors_own_admin_does_sync(client_for, org, org_admin, mcp_server):
    """The control of the test above: the request the outsider sent does sync for the owner's admin."""
    connector = mcp_connector(org, mcp_server.url)
    response = client_for(org_admin).post(_sync_url(org.slug, connector.pk), format="json")
    assert response.status_code == 200, response.content
    assert ConnectorAction.objects.unscoped().filter(connector=connector, mcp_tool="lookup_order").exists()
    assert mcp_server.requests != []
