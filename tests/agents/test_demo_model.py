"""The offline demo model drives the real engine: it picks tools from the question and labels its answers."""

from __future__ import annotations

import pytest

from agents.demo_model import LABEL_EN, LABEL_ZH, DemoLLM
from agents.engine.events import EventStream
from agents.engine.react import ReActAgent
from agents.engine.tools import FunctionTool, ToolRegistry

ORDER_SCHEMA = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}


def _registry(calls):
    async def get_purchase_order(order_id: int) -> str:
        calls.append(("get_purchase_order", order_id))
        return f'{{"id": {order_id}, "supplier": "Nordic Office AB", "status": "draft"}}'

    async def list_payments() -> str:
        calls.append(("list_payments", None))
        return "[]"

    return ToolRegistry(
        [
            FunctionTool(
                "erp__get_purchase_order",
                "Get one purchase order by id",
                get_purchase_order,
                parameters=ORDER_SCHEMA,
            ),
            FunctionTool("erp__list_payments", "List payments", list_payments),
        ]
    )


async def _ask(question):
    calls = []
    agent = ReActAgent(DemoLLM(stream_delay=0), _registry(calls))
    stream = EventStream()
    result = await agent.run(question, on_event=stream)
    answer = await agent.stream_answer(result, on_event=stream)
    stream.close()
    events = [e async for e in stream]
    return calls, answer, events


async def test_demo_model_calls_the_tool_named_by_the_question_with_its_number():
    calls, answer, events = await _ask("Show me purchase order 3")
    assert calls == [("get_purchase_order", 3)]
    assert answer.startswith(f"**{LABEL_EN}**")
    assert "Nordic Office AB" in answer
    assert events[-1].channel == "done" and events[-1].data["iterations"] >= 2


async def test_demo_model_answers_chinese_questions_in_chinese():
    calls, answer, _ = await _ask("查看采购订单 3")
    assert calls == [("get_purchase_order", 3)]
    assert LABEL_ZH in answer


async def test_demo_model_without_a_matching_tool_says_so_and_calls_nothing():
    calls, answer, _ = await _ask("What is the weather like?")
    assert calls == []
    assert LABEL_EN in answer and "no tool" in answer


@pytest.mark.django_db
def test_seed_demo_creates_the_demo_agent_on_the_erp_connectors_and_the_policy_knowledge_base():
    from django.core.management import call_command

    from agents.models import Agent

    call_command("seed_demo", password="demo-pass-123")
    call_command("seed_demo")
    agent = Agent.objects.unscoped().get(organization__slug="demo")
    assert agent.name == "Purchasing assistant"
    assert sorted(agent.connectors.values_list("name", flat=True)) == ["erp", "erp_mcp", "purchasing_policy"]


async def test_demo_model_never_calls_a_write_action_for_a_read_question():
    calls = []

    async def create_payment(order_id: int) -> str:
        calls.append(("create_payment", order_id))
        return "paid"

    async def list_purchase_orders() -> str:
        calls.append(("list_purchase_orders", None))
        return "[]"

    registry = ToolRegistry(
        [
            FunctionTool(
                "erp__create_payment",
                "Create a payment for a purchase order",
                create_payment,
                parameters=ORDER_SCHEMA,
            ),
            FunctionTool(
                "erp__list_purchase_orders",
                "List purchase orders, optionally by status",
                list_purchase_orders,
            ),
        ]
    )
    agent = ReActAgent(DemoLLM(stream_delay=0), registry)
    await agent.run("Which purchase orders are still drafts?")
    assert calls == [("list_purchase_orders", None)]

    calls.clear()
    await agent.run("Create a payment for purchase order 2")
    assert calls == [("create_payment", 2)]
