"""How exposed agents become MCP tools (names, descriptions, isolation) and how a run's events read as
progress lines."""

from __future__ import annotations

import pytest

from agents.mcp_endpoint.progress import ProgressNarrator
from agents.mcp_endpoint.tools import agent_tool_named, agent_tools_for_org, tool_name_for
from tests.agents.factories import AgentFactory


@pytest.mark.parametrize(
    ("agent_name", "tool_name"),
    [("Purchasing assistant", "purchasing_assistant"), ("ERP / Bot 2", "erp_bot_2"), ("采购助手", "agent")],
)
def test_a_tool_name_is_the_agent_name_in_letters_digits_and_underscores(agent_name, tool_name):
    assert tool_name_for(agent_name) == tool_name


@pytest.mark.django_db
def test_only_the_orgs_active_exposed_agents_are_tools_each_with_a_unique_name(org, other_org):
    AgentFactory(organization=org, name="Purchasing assistant", description="Orders.", exposed_over_mcp=True)
    AgentFactory(organization=org, name="ERP bot", exposed_over_mcp=True)
    twin_a = AgentFactory(organization=org, name="Sales-desk", exposed_over_mcp=True)
    twin_b = AgentFactory(organization=org, name="Sales desk", exposed_over_mcp=True)
    AgentFactory(organization=org, name="Hidden", exposed_over_mcp=False)
    AgentFactory(organization=org, name="Retired", exposed_over_mcp=True, active=False)
    AgentFactory(organization=other_org, name="Globex helper", exposed_over_mcp=True)

    tools = agent_tools_for_org(organization_id=org.pk)

    names = [tool.name for tool in tools]
    assert names[:2] == ["erp_bot", "purchasing_assistant"]
    assert sorted(names[2:]) == sorted([f"sales_desk_{twin_a.pk.hex[:8]}", f"sales_desk_{twin_b.pk.hex[:8]}"])
    by_name = {tool.name: tool for tool in tools}
    assert by_name["purchasing_assistant"].description == "Ask the purchasing assistant. Orders."
    assert by_name["erp_bot"].description == "Ask the ERP bot."
    assert agent_tool_named(organization_id=org.pk, name="globex_helper") is None
    assert agent_tool_named(organization_id=org.pk, name="hidden") is None


def _frame(event: str, **data):
    return {"seq": 1, "run_id": "r", "event": event, "data": data}


def test_the_run_events_read_as_progress_lines_and_answer_deltas_are_left_out():
    narrator = ProgressNarrator(language="en")
    lines = [
        narrator.line_for(frame)
        for frame in [
            _frame("step", type="thinking", status="start", iteration=1),
            _frame("step", type="iteration", status="start", tool_name="erp__pay"),
            _frame("approval", status="pending", tool_name="erp__pay", approvers=["April", "ou_boss"]),
            _frame(
                "approval", status="rejected", tool_name="erp__pay", decided_by="April", reason="too much"
            ),
            _frame("step", type="iteration", status="done", tool_name="erp__pay", error="rejected"),
            _frame("answer", status="delta", content="Hel"),
            _frame("step", type="answer", status="start"),
            _frame("done", cancelled=False, answer="Hello"),
        ]
    ]
    assert lines == [
        "Thinking (step 1)",
        "Calling erp__pay",
        "erp__pay is waiting for approval by April, ou_boss",
        "erp__pay was rejected by April (too much)",
        "erp__pay failed: rejected",
        None,
        "Writing the answer",
        "Done",
    ]
    assert narrator.error == ""
    assert narrator.line_for(_frame("error", code="run_failed", message="boom")) == "Error: boom"
    assert narrator.error == "boom"
