"""The offline demo model answers the demo's MCP example questions with the MCP connector's tools: the
read with ``find_purchase_orders``, the write with ``create_purchase_request``; the other example
questions keep to the ERP API. The tools are the seeded agent's own, named and described as the runtime
names and describes them."""

from __future__ import annotations

import asyncio

import pytest

from agents.demo import DEMO_AGENT_NAME, DEMO_EXAMPLE_QUESTIONS
from agents.demo_model import DemoLLM
from agents.engine.events import EventStream
from agents.engine.react import ReActAgent
from agents.engine.tools import FunctionTool, ToolRegistry
from agents.models import Agent
from connectors.models import ConnectorAction
from connectors.tools import tool_description_for, tool_name_for
from platform_core.demo import demo_seed

pytestmark = pytest.mark.django_db


def _demo_agent_tools(calls: list) -> ToolRegistry:
    agent = Agent.objects.unscoped().get(name=DEMO_AGENT_NAME)
    actions = (
        ConnectorAction.objects.unscoped()
        .filter(connector__in=agent.connectors.all(), is_active=True)
        .select_related("connector")
    )

    def make(name: str):
        async def run(**kwargs):
            calls.append((name, kwargs))
            return "[]"

        return run

    return ToolRegistry(
        [
            FunctionTool(
                tool_name_for(a.connector.name, a.name),
                tool_description_for(a),
                make(tool_name_for(a.connector.name, a.name)),
                parameters=a.parameters,
            )
            for a in sorted(actions, key=lambda a: (a.connector.name, a.name))
        ]
    )


async def _tools_called(question: str, registry: ToolRegistry, calls: list) -> list:
    agent = ReActAgent(DemoLLM(stream_delay=0), registry)
    stream = EventStream()
    await agent.run(question, on_event=stream)
    stream.close()
    [e async for e in stream]
    return calls


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (DEMO_EXAMPLE_QUESTIONS[3], [("erp_mcp__find_purchase_orders", {"supplier": "Nordic Office AB"})]),
        (
            DEMO_EXAMPLE_QUESTIONS[4],
            [("erp_mcp__create_purchase_request", {"supplier": "Nordic Office AB", "amount": 2400.0})],
        ),
        (DEMO_EXAMPLE_QUESTIONS[0], [("erp__list_purchase_orders", {"status": "draft"})]),
    ],
    ids=["mcp read", "mcp write", "api read"],
)
def test_the_demo_model_answers_the_mcp_example_questions_with_the_mcp_tools(question, expected):
    demo_seed(admin_password="pw-for-tests")
    calls: list = []
    registry = _demo_agent_tools(calls)
    assert asyncio.run(_tools_called(question, registry, calls)) == expected
