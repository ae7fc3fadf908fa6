"""The MCP kind (connectors.mcp.kind): what its actions need, and what their tools say and allow."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from agents.engine.run_context import RunContext
from connectors.models import ConnectorAction
from connectors.tools import ConnectorTool, tool_description_for
from tests.factories import ConnectorFactory

pytestmark = pytest.mark.django_db


def _erp(org):
    return ConnectorFactory(
        organization=org, name="erp", kind="mcp", base_url="https://erp.example.com/mcp", read_timeout=20.0
    )


def test_an_mcp_tool_names_the_server_tool_and_allows_a_session_reopened_once(org):
    action = ConnectorAction.objects.create(
        connector=_erp(org), organization=org, name="lookup_order", mcp_tool="lookupOrder"
    )
    assert action.is_write is True  # until an admin confirms it as a read
    assert tool_description_for(action) == (
        "Lookup order (erp: MCP tool lookupOrder)\nThis action CHANGES data in the system."
    )
    assert ConnectorTool(action, RunContext(org_id=org.pk)).timeout == (5.0 + 2 * 20.0) * 2 + 5


def test_an_mcp_action_names_a_tool_and_has_no_http_method_path_or_sql(org):
    action = ConnectorAction(connector=_erp(org), name="typed_in", method="GET", sql_template="SELECT 1")
    with pytest.raises(ValidationError) as raised:
        action.full_clean()
    assert raised.value.message_dict["mcp_tool"] == [
        "An MCP action names a tool of the server; use 'Sync tools'."
    ]
    assert raised.value.message_dict["method"] == ["MCP actions have no HTTP method, path or SQL."]
