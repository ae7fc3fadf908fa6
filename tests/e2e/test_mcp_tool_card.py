"""An MCP tool's call in the chat, in a real browser: the tool card names the tool, shows its arguments
and observation, and offers the image the MCP server returned as a file (the model saw one line).

The MCP connector is added to the browser tests' world for this test only (and removed after it), in a
subprocess on the world's database, pointing at a real SDK server on loopback.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.browser_pages import expect
from tests.e2e.chat_pages import open_new_chat
from tests.fakes.mcp_servers import FakeMcpServer
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.e2e

_SETUP = """
import json, sys, django
django.setup()
from agents.models import Agent
from connectors.mcp.sync import connector_sync_mcp_tools
from connectors.models import Connector, ConnectorAction
from platform_core.models import Organization
org = Organization.objects.get(slug="acme")
agent = Agent.objects.unscoped().get(organization=org, name="Purchasing assistant")
if sys.argv[1] == "add":
    connector = Connector.objects.create(
        organization=org, name="charts", kind="mcp", base_url=sys.argv[2], allowed_private_hosts=["127.0.0.1"]
    )
    report = connector_sync_mcp_tools(connector=connector, actor=None)
    # Only the chart tool, so the agent stays under the engine's tool-selection threshold.
    ConnectorAction.objects.unscoped().filter(connector=connector).exclude(name="chart").update(is_active=False)
    agent.connectors.add(connector)
    print(json.dumps(report.as_dict()))
else:
    Connector.objects.unscoped().filter(organization=org, name="charts").delete()
"""


@pytest.fixture
def mcp_charts(e2e_server):
    with FakeMcpServer() as server:
        report = json.loads(e2e_server.python(_SETUP, "add", server.url).strip().splitlines()[-1])
        assert "chart" in report["added"]
        try:
            yield server
        finally:
            e2e_server.python(_SETUP, "remove")


def test_an_mcp_tool_call_shows_its_card_with_the_image_as_a_file(make_page, scripted_llm, mcp_charts):
    scripted_llm.script(
        tool_calls(call("charts__chart", {}, id="call_chart")),
        text("Here is the sales chart."),
        text("Here is the sales chart."),
    )
    page = make_page()
    open_new_chat(page)
    page.fill("#composer-input", "Show me the sales chart")
    page.press("#composer-input", "Enter")

    card = page.locator(".tool-card")
    expect(card.locator(".tool-name")).to_have_text("charts__chart")
    expect(card.locator(".tool-observation")).to_contain_text("Sales by month")
    expect(card.locator(".tool-artifacts")).to_contain_text("image-2.png")
    expect(card.locator(".tool-artifacts")).to_contain_text("image/png")
    expect(page.locator(".answer").last).to_contain_text("Here is the sales chart.")
    assert mcp_charts.calls_of("chart") == [{}]
    model_saw = json.dumps(scripted_llm.requests[1]["messages"])
    assert "image/png" in model_saw and "iVBOR" not in model_saw
