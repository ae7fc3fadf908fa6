"""A local MCP command (stdio) runs only when the operator allows it in MCP_STDIO_ALLOWED_COMMANDS,
never on an org admin's say-so alone: refused on save and, if the setting changed since, at call time."""

from __future__ import annotations

import sys

import pytest
from django.core.exceptions import ValidationError

from connectors.mcp.sync import connector_sync_mcp_tools
from connectors.models import Connector
from tests.factories import ConnectorFactory, OrganizationFactory

pytestmark = pytest.mark.django_db

COMMAND = [sys.executable, "-m", "tests.fakes.mcp_servers"]


def _stdio(org, **extra):
    return ConnectorFactory(
        organization=org,
        name="local",
        kind="mcp",
        base_url="",
        mcp_transport="stdio",
        mcp_command=COMMAND,
        **extra,
    )


def test_a_stdio_connector_is_refused_on_save_unless_the_operator_allows_the_command(settings):
    settings.MCP_STDIO_ALLOWED_COMMANDS = []
    connector = Connector(
        organization=OrganizationFactory(),
        name="local",
        kind="mcp",
        mcp_transport="stdio",
        mcp_command=COMMAND,
    )
    with pytest.raises(ValidationError) as error:
        connector.full_clean()
    assert "mcp_command" in error.value.message_dict
    settings.MCP_STDIO_ALLOWED_COMMANDS = [sys.executable]
    connector.full_clean()


def test_a_stdio_connector_saved_earlier_is_refused_at_call_time_once_the_operator_disallows_it(settings):
    settings.MCP_STDIO_ALLOWED_COMMANDS = []
    connector = _stdio(OrganizationFactory())
    failure = connector_sync_mcp_tools(connector=connector, actor=None)
    assert "MCP_STDIO_ALLOWED_COMMANDS" in failure.error
    assert not connector.actions.exists()


def test_an_allowed_stdio_command_serves_its_tools(settings):
    settings.MCP_STDIO_ALLOWED_COMMANDS = [sys.executable]
    connector = _stdio(OrganizationFactory(), read_timeout=30)
    report = connector_sync_mcp_tools(connector=connector, actor=None)
    assert "lookup_order" in report.added
