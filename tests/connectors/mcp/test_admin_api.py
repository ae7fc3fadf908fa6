"""MCP connectors in the admin and the API: created and changed like the others, tools synced on save,
a "Sync tools" button and API action, and another organisation's connector out of reach."""

from __future__ import annotations

import pytest
from django.urls import reverse

from connectors.models import Connector, ConnectorAction
from tests.connectors.mcp.conftest import mcp_connector
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _api(org, *parts):
    return "/api/v1/orgs/{}/{}".format(org.slug, "".join(f"{p}/" for p in parts))


def _admin(name, pk):
    return reverse(f"admin:connectors_connector_{name}", args=[pk])


@pytest.fixture
def admin_client(client, org_admin):
    assert client.login(username=org_admin.username, password=PASSWORD)
    return client


def test_the_api_creates_an_mcp_connector_and_syncs_its_tools_on_save(client_for, org_admin, org, mcp_server):
    body = {
        "name": "erp",
        "kind": "mcp",
        "base_url": mcp_server.url,
        "mcp_transport": "streamable_http",
        "allowed_private_hosts": ["127.0.0.1"],
    }
    response = client_for(org_admin).post(_api(org, "connectors"), body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert "lookup_order" in data["tool_sync"]["added"] and data["mcp_transport"] == "streamable_http"
    action = ConnectorAction.objects.unscoped().get(connector_id=data["id"], name="lookup_order")
    assert action.mcp_tool == "lookup_order" and action.is_write is True  # until an admin confirms it


def test_the_api_sync_tools_action_reports_and_an_http_connector_has_none(
    client_for, org_admin, org, mcp_server
):
    connector = mcp_connector(org, mcp_server.url)
    client = client_for(org_admin)
    response = client.post(_api(org, "connectors", connector.pk, "sync-tools"), format="json")
    assert response.status_code == 200 and "create_payment" in response.json()["added"]
    actions = client.get(_api(org, "connectors", connector.pk, "actions")).json()["results"]
    payment = next(a for a in actions if a["name"] == "create_payment")
    assert payment["mcp_tool"] == "create_payment" and payment["is_write"] is True
    http = Connector.objects.create(organization=org, name="crm", base_url="https://crm.example.com")
    assert client.post(_api(org, "connectors", http.pk, "sync-tools"), format="json").status_code == 400


def test_another_organisations_mcp_connector_cannot_be_synced(client_for, org_admin, other_org, mcp_server):
    foreign = mcp_connector(other_org, mcp_server.url)
    response = client_for(org_admin).post(
        _api(other_org, "connectors", foreign.pk, "sync-tools"), format="json"
    )
    assert response.status_code == 404
    assert mcp_server.requests == []


def test_an_unreachable_server_is_a_502_with_the_reason(client_for, org_admin, org, mcp_server):
    connector = mcp_connector(org, mcp_server.url, allowed_private_hosts=[])
    response = client_for(org_admin).post(_api(org, "connectors", connector.pk, "sync-tools"), format="json")
    assert response.status_code == 502 and "SSRF guard" in response.json()["error"]


def test_the_sync_tools_button_syncs_and_says_what_changed(admin_client, org, mcp_server):
    connector = mcp_connector(org, mcp_server.url)
    page = admin_client.get(_admin("change", connector.pk)).content.decode()
    assert _admin("sync_tools", connector.pk) in page and "Sync tools" in page
    response = admin_client.post(_admin("sync_tools", connector.pk), follow=True)
    assert response.redirect_chain[-1][0] == _admin("change", connector.pk)
    assert "tools synced. Added: " in response.content.decode()
    assert ConnectorAction.objects.unscoped().filter(connector=connector, mcp_tool="chart").exists()


def test_the_sync_tools_button_is_only_for_mcp_connectors_of_ones_own_organisation(
    admin_client, org, other_org, mcp_server
):
    http = Connector.objects.create(organization=org, name="crm", base_url="https://crm.example.com")
    assert _admin("sync_tools", http.pk) not in admin_client.get(_admin("change", http.pk)).content.decode()
    assert admin_client.post(_admin("sync_tools", http.pk)).status_code == 404
    foreign = mcp_connector(other_org, mcp_server.url)
    assert admin_client.post(_admin("sync_tools", foreign.pk)).status_code in (302, 404)
    assert not ConnectorAction.objects.unscoped().filter(connector=foreign).exists()
