"""The demo MCP server (``/demo-mcp/``) and the demo organisation's MCP connector on it: seed_demo stores
the server's tools as actions (the write under an approval policy); the server answers the SDK client
through daphne; and the demo agent's MCP read goes through while its MCP write waits for approval."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.contrib.auth import get_user_model

from agents.demo import DEMO_AGENT_NAME, DEMO_MCP_POLICY_NAME
from agents.models import Agent, ExecutionMode
from connectors.demo.api.models import DemoPurchaseOrder
from connectors.demo.mcp.seed import DEMO_MCP_CONNECTOR_NAME
from connectors.models import Connector, ConnectorCallLog
from hooks.models import ApprovalPolicy
from platform_core.demo import DEMO_ADMIN, DEMO_ORG_SLUG, demo_seed
from platform_core.identity.api_keys.keys import api_token_issue
from platform_core.models import AuditLog
from tests.agents.factories import ModelConfigFactory
from tests.agents.mcp_endpoint.live import call_agent_until, mcp_session
from tests.fakes.openai_replies import call, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


def test_seed_demo_connects_the_demo_mcp_server_with_its_tools_and_holds_its_write_for_approval():
    org = demo_seed(admin_password="pw-for-tests").organization
    demo_seed(admin_password="pw-for-tests")  # idempotent

    connector = Connector.objects.unscoped().get(organization=org, name=DEMO_MCP_CONNECTOR_NAME)
    assert connector.kind == "mcp" and connector.mcp_transport == "streamable_http"
    assert connector.base_url == "http://127.0.0.1:8000/demo-mcp/"
    assert connector.allowed_private_hosts == ["127.0.0.1"]
    actions = {a.name: a for a in connector.actions.all()}
    assert sorted(actions) == ["create_purchase_request", "find_purchase_orders"]
    assert actions["find_purchase_orders"].is_write is False  # confirmed as a read by the seed, audited
    assert actions["find_purchase_orders"].mcp_read_confirmed_at is not None
    assert (
        AuditLog.objects.filter(
            action="connector_action.mcp_read_confirmed", target_id=str(actions["find_purchase_orders"].pk)
        ).count()
        == 1
    )
    assert actions["create_purchase_request"].is_write is True
    assert actions["create_purchase_request"].source == "mcp"
    policy = ApprovalPolicy.objects.unscoped().get(organization=org, name=DEMO_MCP_POLICY_NAME)
    assert list(policy.actions.all()) == [actions["create_purchase_request"]]
    agent = Agent.objects.unscoped().get(organization=org, name=DEMO_AGENT_NAME)
    assert agent.exposed_over_mcp and connector in agent.connectors.all()


async def test_the_demo_mcp_server_answers_a_read_and_creates_a_purchase_request(daphne_url):
    await database_sync_to_async(demo_seed)(admin_password="pw-for-tests")
    first = await database_sync_to_async(DemoPurchaseOrder.objects.order_by("id").first)()
    async with mcp_session(f"{daphne_url}/demo-mcp/") as session:
        listed = await session.list_tools()
        found = await session.call_tool("find_purchase_orders", {"number": first.number})
        created = await session.call_tool(
            "create_purchase_request",
            {"supplier": "Nordic Office AB", "description": "Chairs", "amount": 2400},
        )
        refused = await session.call_tool("create_purchase_request", {"supplier": "X", "amount": -1})

    tools = {tool.name: tool for tool in listed.tools}
    assert tools["find_purchase_orders"].annotations.read_only_hint is True
    assert tools["create_purchase_request"].annotations.read_only_hint is False
    orders = json.loads(found.content[0].text)
    assert [(o["number"], o["supplier"]) for o in orders] == [(first.number, "Shenzhen Bright Electronics")]
    request = json.loads(created.content[0].text)
    assert request["status"] == "draft" and request["amount"] == "2400.00"
    stored = await database_sync_to_async(DemoPurchaseOrder.objects.get)(number=request["number"])
    assert stored.supplier == "Nordic Office AB"
    assert refused.is_error and "amount" in refused.content[0].text


def _demo_world(daphne_url: str, llm_base_url: str) -> dict[str, str]:
    org = demo_seed(admin_password="pw-for-tests").organization
    # The demo server as this test's daphne serves it, and the scripted LLM as the organisation's model.
    Connector.objects.unscoped().filter(organization=org, name=DEMO_MCP_CONNECTOR_NAME).update(
        base_url=f"{daphne_url}/demo-mcp/"
    )
    ModelConfigFactory(organization=org, base_url=llm_base_url, is_default=True)
    Agent.objects.unscoped().filter(organization=org, name=DEMO_AGENT_NAME).update(
        execution_mode=ExecutionMode.REACT
    )
    admin = get_user_model().objects.get(username=DEMO_ADMIN)
    return {
        "key": api_token_issue(user=admin, name="desktop")[1],
        "orders": str(DemoPurchaseOrder.objects.count()),
    }


def _mcp_calls() -> list[tuple[str, str, str]]:
    return list(
        ConnectorCallLog.objects.unscoped()
        .filter(connector__name=DEMO_MCP_CONNECTOR_NAME)
        .order_by("id")
        .values_list("tool_name", "status", "mcp_method")
    )


async def test_the_demo_agents_mcp_read_goes_through_and_its_mcp_write_waits_for_approval(
    daphne_url, scripted_llm
):
    world = await database_sync_to_async(_demo_world)(daphne_url, scripted_llm.base_url)
    scripted_llm.script(
        tool_calls(call("erp_mcp__find_purchase_orders", {"number": "PO-0003"}, id="r1")),
        tool_calls(
            call(
                "erp_mcp__create_purchase_request", {"supplier": "Nordic Office AB", "amount": 2400}, id="w1"
            )
        ),
    )
    messages: list[str] = []
    async with mcp_session(f"{daphne_url}/mcp/orgs/{DEMO_ORG_SLUG}/", world["key"]) as session:
        await call_agent_until(
            session,
            "Order desks again",
            lambda message: "erp_mcp__create_purchase_request is waiting for approval" in message,
            within=30,
            heard=messages,
        )

    assert "erp_mcp__find_purchase_orders answered" in messages
    calls = await database_sync_to_async(_mcp_calls)()
    assert calls[0] == ("erp_mcp__find_purchase_orders", "ok", "tools/call")
    assert ("erp_mcp__create_purchase_request", "ok", "tools/call") not in calls
    assert str(await database_sync_to_async(DemoPurchaseOrder.objects.count)()) == world["orders"]
