"""'Sync tools' against a real MCP server: the tools become actions (added, changed, removed), every
tool is a write until an admin confirms it (its annotations are stored as the server's claim), and an
admin's override survives a re-sync."""

from __future__ import annotations

import pytest
from mcp import types

from connectors.mcp.confirm import mcp_action_confirm_read
from connectors.mcp.sync import connector_sync_mcp_tools
from connectors.models import ConnectorAction
from platform_core.models import AuditLog
from tests.connectors.mcp.conftest import mcp_connector
from tests.factories import OrganizationFactory

pytestmark = pytest.mark.django_db


def _actions(connector):
    return {a.name: a for a in ConnectorAction.objects.unscoped().filter(connector=connector)}


def test_sync_adds_every_tool_with_schema_description_and_annotations_as_unconfirmed_writes(mcp_server):
    connector = mcp_connector(OrganizationFactory(), mcp_server.url)
    report = connector_sync_mcp_tools(connector=connector, actor=None)
    assert set(report.added) == {
        "lookup_order",
        "create_payment",
        "delete_order",
        "fail",
        "sleep",
        "big",
        "chart",
        "transfer",
    }
    actions = _actions(connector)
    lookup = actions["lookup_order"]
    assert lookup.mcp_tool == "lookup_order" and lookup.source == "mcp"
    assert lookup.description == "Look up one order by its id."
    assert lookup.parameters["properties"]["order_id"]["type"] == "string"
    assert lookup.mcp_annotations == {"readOnlyHint": True, "idempotentHint": True}
    assert lookup.is_write is True  # readOnlyHint is the server's claim: a write until an admin confirms
    assert lookup.mcp_read_confirmed_at is None
    assert actions["create_payment"].is_write is True  # no annotations: a write
    assert actions["delete_order"].is_write is True  # destructive
    assert actions["fail"].is_write is True
    assert AuditLog.objects.filter(action="connector.mcp_tools_synced").count() == 1


def test_resync_reports_changed_and_removed_and_keeps_an_admin_override(mcp_server):
    connector = mcp_connector(OrganizationFactory(), mcp_server.url)
    connector_sync_mcp_tools(connector=connector, actor=None)
    payment = _actions(connector)["create_payment"]
    mcp_action_confirm_read(action=payment, actor=None)  # the admin confirms it as a read

    mcp_server.mcp.remove_tool("delete_order")
    mcp_server.mcp.remove_tool("lookup_order")
    mcp_server.mcp.add_tool(
        lambda order_id: "ok",
        name="lookup_order",
        description="Look up one order (now with more detail).",
        annotations=types.ToolAnnotations(readOnlyHint=True),
    )
    report = connector_sync_mcp_tools(connector=connector, actor=None)

    assert report.changed == ("lookup_order",)
    assert report.removed == ("delete_order",)
    assert report.added == ()
    actions = _actions(connector)
    assert actions["delete_order"].is_active is False  # deactivated, not deleted
    assert actions["delete_order"].removed_by_import_at is not None
    assert actions["lookup_order"].description == "Look up one order (now with more detail)."
    assert actions["create_payment"].is_write is False and actions["create_payment"].mcp_read_confirmed_at


def test_a_tool_that_comes_back_is_reactivated_and_reported_as_added(mcp_server):
    connector = mcp_connector(OrganizationFactory(), mcp_server.url)
    connector_sync_mcp_tools(connector=connector, actor=None)
    tool = mcp_server.mcp._tool_manager.get_tool("big")  # noqa: SLF001 (put the same tool back)
    mcp_server.mcp.remove_tool("big")
    connector_sync_mcp_tools(connector=connector, actor=None)
    mcp_server.mcp.add_tool(tool.fn, name="big", description=tool.description, annotations=tool.annotations)
    report = connector_sync_mcp_tools(connector=connector, actor=None)
    assert report.added == ("big",)
    assert _actions(connector)["big"].is_active is True


def test_sync_of_an_unreachable_private_server_is_refused_by_the_ssrf_guard(mcp_server):
    connector = mcp_connector(OrganizationFactory(), mcp_server.url, allowed_private_hosts=[])
    failure = connector_sync_mcp_tools(connector=connector, actor=None)
    assert "SSRF guard" in failure.error and "loopback" in failure.error
    assert mcp_server.requests == []
    assert not ConnectorAction.objects.unscoped().filter(connector=connector).exists()


def test_oauth2_client_credentials_fetch_a_token_and_send_it(settings):
    from connectors.http_auth import forget_all_tokens
    from tests.fakes.mcp_servers import FakeMcpServer

    forget_all_tokens()
    with FakeMcpServer(token="oauth-access-1") as server:
        connector = mcp_connector(
            OrganizationFactory(),
            server.url,
            auth_type="oauth2_client_credentials",
            oauth_client_id="platform",
            oauth_token_url=f"{server.base_url}/token",
            auth_secret="client-secret-9",
        )
        report = connector_sync_mcp_tools(connector=connector, actor=None)
        assert "lookup_order" in report.added
        (token_request,) = server.token_requests
        assert token_request["authorization"].startswith("Basic ")
        mcp_requests = [h for _m, path, h in server.requests if path == "/mcp"]
        assert mcp_requests and all(h["authorization"] == "Bearer oauth-access-1" for h in mcp_requests)
    forget_all_tokens()


def test_a_server_that_speaks_only_the_older_sse_transport_is_synced_over_it(mcp_server):
    connector = mcp_connector(OrganizationFactory(), f"{mcp_server.base_url}/sse", mcp_transport="sse")
    report = connector_sync_mcp_tools(connector=connector, actor=None)
    assert "lookup_order" in report.added
    assert any(path == "/sse" for _m, path, _h in mcp_server.requests)
    assert not any(path == "/mcp" for _m, path, _h in mcp_server.requests)


def test_test_connection_of_an_mcp_connector_lists_the_tools(mcp_server):
    from connectors.services import connector_test_connection

    result = connector_test_connection(connector=mcp_connector(OrganizationFactory(), mcp_server.url))
    assert result.type == "works" and "8 tools" in result.detail
