"""Issue #31, finding 4: a synced MCP tool whose name or description resembles another connector's
tool of the same organisation is named in the sync report and on the connector's admin page; another
organisation's tools are never compared; tool descriptions reach the admin's pages escaped."""

from __future__ import annotations

import pytest
from django.urls import reverse
from mcp import types

from connectors.mcp.sync import connector_apply_mcp_tools, connector_sync_mcp_tools
from connectors.models import ConnectorAction
from tests.connectors.mcp.conftest import mcp_connector
from tests.factories import PASSWORD, ConnectorActionFactory, ConnectorFactory

pytestmark = pytest.mark.django_db

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>Reads orders.'


def _warnings(report) -> set[tuple[str, str, str]]:
    return {(w["tool"], w["other_tool"], w["reason"]) for w in report.as_dict()["warnings"]}


def test_a_synced_tool_named_like_another_connectors_tool_is_reported_with_that_tool(
    org, other_org, mcp_server
):
    erp = ConnectorFactory(organization=org, name="erp")
    ConnectorActionFactory(connector=erp, name="create_payment", description="Pay a supplier invoice.")
    ConnectorActionFactory(connector=erp, name="list_suppliers", description="List the suppliers.")
    foreign = ConnectorFactory(organization=other_org, name="bank")
    ConnectorActionFactory(connector=foreign, name="lookup_order", description="Look up one order by its id.")

    report = connector_sync_mcp_tools(connector=mcp_connector(org, mcp_server.url, name="tools"), actor=None)

    assert _warnings(report) == {("create_payment", "erp__create_payment", "same name")}
    assert report.as_dict()["warnings"][0]["other_connector"] == "erp"


def test_a_tool_whose_description_resembles_another_connectors_is_reported(org):
    crm = ConnectorFactory(organization=org, name="crm")
    ConnectorActionFactory(
        connector=crm, name="find_customer", description="Find one customer by their e-mail address."
    )
    tool = types.Tool(
        name="customer_search",
        description="Find one customer by their e-mail address!",
        input_schema={"type": "object"},
    )
    mcp = mcp_connector(org, "https://tools.example.com/mcp")
    report = connector_apply_mcp_tools(connector=mcp, tools=(tool,), actor=None)
    assert _warnings(report) == {("customer_search", "crm__find_customer", "similar description")}


def test_the_connector_page_and_the_sync_message_name_the_lookalike(client, org, org_admin, mcp_server):
    erp = ConnectorFactory(organization=org, name="erp")
    ConnectorActionFactory(connector=erp, name="create_payment")
    connector = mcp_connector(org, mcp_server.url, name="tools")
    assert client.login(username=org_admin.username, password=PASSWORD)

    synced = client.post(reverse("admin:connectors_connector_sync_tools", args=[connector.pk]), follow=True)
    page = client.get(reverse("admin:connectors_connector_change", args=[connector.pk])).content.decode()

    expected = "create_payment has the same name as erp__create_payment of the connector erp."
    assert expected in synced.content.decode()
    assert expected in page


def test_tool_descriptions_reach_the_admin_escaped(client, org, org_admin):
    connector = mcp_connector(org, "https://tools.example.com/mcp", name="tools")
    tool = types.Tool(name="orders", description=HOSTILE, input_schema={"type": "object"})
    connector_apply_mcp_tools(connector=connector, tools=(tool,), actor=None)
    other = ConnectorFactory(organization=org, name="erp")
    ConnectorActionFactory(connector=other, name="orders_list", description=HOSTILE)
    action = ConnectorAction.objects.unscoped().get(connector=connector)
    assert client.login(username=org_admin.username, password=PASSWORD)

    pages = [
        client.get(reverse("admin:connectors_connectoraction_change", args=[action.pk])),
        client.get(reverse("admin:connectors_connector_change", args=[connector.pk])),
        client.get(reverse("admin:connectors_connectoraction_changelist") + "?q=orders"),
    ]
    for response in pages:
        html = response.content.decode()
        assert response.status_code == 200
        assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in pages[0].content.decode()
