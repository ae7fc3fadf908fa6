"""The offline demo model understands the natural ways of asking the demo's questions, on the demo ERP's
real tool schemas, and answers with readable Markdown (tables for lists), never a JSON blob.

The tools are the demo ERP's own operations (imported from its OpenAPI document like the seeded
connector), answering with the demo's seeded orders. Extend the corpora below with new phrasings.
"""

from __future__ import annotations

import json

import pytest

from agents.demo_model import LABEL_EN, LABEL_ZH, DemoLLM
from agents.demo_summary import tool_result_markdown
from agents.engine.events import EventStream
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.react import ReActAgent
from agents.engine.tools import FunctionTool, ToolRegistry
from connectors.demo.api.document import demo_openapi_document
from connectors.http.openapi import parse_openapi_document
from connectors.sql.tables import render_table

ORDERS = [
    {
        "id": 1,
        "number": "PO-0001",
        "supplier": "Shenzhen Bright Electronics",
        "description": "200 LED panels",
        "amount": "18600.00",
        "currency": "CNY",
        "status": "approved",
        "paid_amount": "0.00",
        "approved_by": "admin",
        "created_at": "2026-01-05T09:00:00+00:00",
    },
    {
        "id": 2,
        "number": "PO-0002",
        "supplier": "Hangzhou Tea Supply Co.",
        "description": "Office tea, Q3",
        "amount": "1280.50",
        "currency": "CNY",
        "status": "draft",
        "paid_amount": "0.00",
        "approved_by": "",
        "created_at": "2026-01-06T09:00:00+00:00",
    },
    {
        "id": 3,
        "number": "PO-0003",
        "supplier": "Nordic Office AB",
        "description": "Standing desks",
        "amount": "9400.00",
        "currency": "CNY",
        "status": "draft",
        "paid_amount": "0.00",
        "approved_by": "",
        "created_at": "2026-01-07T09:00:00+00:00",
    },
]


def _answer_for(name: str, args: dict) -> str:
    if name == "list_purchase_orders":
        rows = [o for o in ORDERS if args.get("status") in (None, o["status"])]
        rows = [o for o in rows if args.get("supplier", "").lower() in o["supplier"].lower()]
        return json.dumps(rows)
    if name == "get_purchase_order":
        order = next((o for o in ORDERS if o["id"] == args.get("order_id")), None)
        return (
            json.dumps({**order, "payments": []}) if order else 'Error: HTTP 404 {"error": "no such order"}'
        )
    if name == "list_payments":
        return json.dumps([])
    if name == "create_payment":
        return json.dumps(
            {"id": 7, "order_number": "PO-0001", "amount": args.get("amount"), "method": "bank_transfer"}
        )
    return json.dumps({"ok": True})


def demo_erp_tools(calls: list) -> ToolRegistry:
    """The demo ERP's operations as tools, named and described as the seeded connector's tools are."""
    tools = []
    actions = parse_openapi_document(demo_openapi_document("http://erp.test")).actions
    for action in sorted(actions, key=lambda a: a.name):  # the seeded connector's order
        summary, _, rest = action.description.partition("\n")
        description = f"{summary} (erp: {action.method} {action.path_template})"
        if rest.strip():
            description += "\n" + rest.strip()
        description += "\nSystem: The demo ERP: purchase orders and payments.\n"
        description += (
            "This action CHANGES data in the system."
            if action.is_write
            else "Read-only: it does not change data."
        )

        def make(name):
            async def run(**kwargs):
                calls.append((name, kwargs))
                return _answer_for(name, kwargs)

            return run

        tools.append(
            FunctionTool(f"erp__{action.name}", description, make(action.name), parameters=action.parameters)
        )
    return ToolRegistry(tools)


async def ask(question: str) -> tuple[list, str]:
    calls: list = []
    agent = ReActAgent(DemoLLM(stream_delay=0), demo_erp_tools(calls))
    stream = EventStream()
    result = await agent.run(question, on_event=stream)
    answer = await agent.stream_answer(result, on_event=stream)
    stream.close()
    [e async for e in stream]
    return calls, answer


PHRASINGS = [
    ("Which purchase orders are still drafts?", "list_purchase_orders", {"status": "draft"}),
    ("List the draft purchase orders", "list_purchase_orders", {"status": "draft"}),
    ("Show me all purchase orders", "list_purchase_orders", {}),
    ("What orders do we have?", "list_purchase_orders", {}),
    ("Which orders are approved?", "list_purchase_orders", {"status": "approved"}),
    ("Show the orders from Nordic Office AB", "list_purchase_orders", {"supplier": "Nordic Office AB"}),
    ("哪些采购订单还是草稿？", "list_purchase_orders", {"status": "draft"}),
    ("Show purchase order PO-0001", "get_purchase_order", {"order_id": 1}),
    ("Show me purchase order 3", "get_purchase_order", {"order_id": 3}),
    ("Who is the supplier of PO-0002?", "get_purchase_order", {"order_id": 2}),
    ("What is order #3 for?", "get_purchase_order", {"order_id": 3}),
    ("查看采购订单 PO-0003", "get_purchase_order", {"order_id": 3}),
    ("List the payments of PO-0001", "list_payments", {"order_id": 1}),
    ("Show all payments", "list_payments", {}),
    ("Pay 18,600 CNY for purchase order PO-0001", "create_payment", {"order_id": 1, "amount": "18600"}),
    ("Pay PO-0001 18600.00", "create_payment", {"order_id": 1, "amount": "18600.00"}),
    ("Make a payment of ¥1,280.50 for order PO-0002", "create_payment", {"order_id": 2, "amount": "1280.50"}),
    ("Pay 50 CNY for purchase order 1", "create_payment", {"order_id": 1, "amount": "50"}),
    ("Create a payment of 9400 for purchase order 3", "create_payment", {"order_id": 3, "amount": "9400"}),
    ("为采购订单 PO-0001 支付 18,600 元", "create_payment", {"order_id": 1, "amount": "18600"}),
    ("Approve purchase order PO-0002", "approve_purchase_order", {"order_id": 2}),
]


@pytest.mark.parametrize(("question", "tool", "arguments"), PHRASINGS, ids=[p[0] for p in PHRASINGS])
async def test_demo_model_calls_the_tool_a_natural_phrasing_asks_for_with_its_arguments(
    question, tool, arguments
):
    calls, _ = await ask(question)
    assert calls == [(tool, arguments)]


PLAN_QUESTION = "Show the draft purchase orders and all payments"
LIST_QUESTIONS = [
    "Which purchase orders are still drafts?",
    "Show me all purchase orders",
    "哪些采购订单还是草稿？",
]


@pytest.mark.parametrize("question", LIST_QUESTIONS)
async def test_demo_model_answers_a_list_with_a_markdown_table_not_a_json_blob(question):
    _, answer = await ask(question)
    lines = answer.splitlines()
    header = next(line for line in lines if line.startswith("| ") and "Supplier" in line)
    separator = lines[lines.index(header) + 1]
    assert set(separator.replace(" ", "")) <= {"|", "-", ":"}
    assert "| PO-0002 | Hangzhou Tea Supply Co." in answer
    assert '{"' not in answer and "[{" not in answer and "```" not in answer
    assert max(len(line) for line in lines) < 200  # nothing that scrolls sideways
    assert answer.startswith(f"**{LABEL_ZH if '草稿' in question else LABEL_EN}**")


async def test_demo_model_answers_one_record_with_its_fields_one_per_line():
    _, answer = await ask("Show purchase order PO-0001")
    assert "- **Supplier**: Shenzhen Bright Electronics" in answer
    assert "- **Amount**: 18600.00" in answer
    assert '{"' not in answer and "```" not in answer


SUMMARY_CORPUS = [
    # (tool result, what the summary contains, what it must not contain)
    ("[]", "No results.", "[]"),
    ('[{"a": "x|y", "b": "line\\nbreak"}]', "| x\\|y | line break |", "\n| x|y"),
    ('{"error": "no such order"}', "- **Error**: no such order", '{"'),
    ("Error: HTTP 409 the order is not approved", "Error: HTTP 409 the order is not approved", "```"),
    ('[{"id": 1, "nested": {"deep": 1}, "name": "n"}]', "| 1 | n |", "deep"),
    ('{"id": 1, "payments": [{"amount": "5.00"}]}', "| 5.00 |", '[{"'),
    (json.dumps([{"n": i} for i in range(40)]), "… and 15 more", "| 39 |"),
    ('[{"id": 1, "name": "n"', '[{"id": 1, "name": "n"', "```"),  # cut JSON: its text, wrapped
]


@pytest.mark.parametrize(("content", "expected", "forbidden"), SUMMARY_CORPUS)
def test_a_tool_result_becomes_readable_markdown(content, expected, forbidden):
    markdown = tool_result_markdown(content, zh=False)
    assert expected in markdown
    assert forbidden not in markdown


def test_sql_rows_become_a_markdown_table_with_the_row_count_below_it():
    """A database connector's result (connectors.sql.tables' compact text) is shown as a table, not as the
    pipe-separated lines the model reads."""
    rendered = render_table(
        ["number", "supplier", "note"],
        [("PO-0002", "Nordic Office AB", "a|b"), ("PO-0003", "Shenzhen 办公", None)],
        more_rows=False,
        max_bytes=4000,
    )
    markdown = tool_result_markdown(rendered.text, zh=False).splitlines()
    assert markdown[:4] == [
        "| number | supplier | note |",
        "|---|---|---|",
        "| PO-0002 | Nordic Office AB | a\\|b |",
        "| PO-0003 | Shenzhen 办公 | NULL |",
    ]
    assert markdown[-1] == "(2 rows)"


@pytest.mark.parametrize(
    "content",
    ["total | 12", "a | b\n1 | 2 | 3\n(1 row)", "just a sentence (with a remark)"],
)
def test_text_that_only_looks_like_a_table_stays_text(content):
    assert not tool_result_markdown(content, zh=False).startswith("|")


async def test_a_question_with_two_parts_is_split_into_one_look_up_per_part_in_plan_mode():
    calls: list = []
    agent = PlanAgent(ModelRegistry({"general": DemoLLM(stream_delay=0)}), demo_erp_tools(calls))
    stream = EventStream()
    result = await agent.run(PLAN_QUESTION, on_event=stream)
    answer = await agent.stream_synthesize(result, on_event=stream)
    stream.close()
    events = [e async for e in stream]

    dag = next(e.data for e in events if e.channel == "plan" and e.data["type"] == "dag")
    assert [(s["id"], s["dependencies"], s["tool_hint"]) for s in dag["steps"]] == [
        ("1", [], "erp__list_purchase_orders"),
        ("2", [], "erp__list_payments"),
        ("3", ["1", "2"], None),
    ]
    assert sorted(calls, key=str) == [("list_payments", {}), ("list_purchase_orders", {"status": "draft"})]
    assert result.stop_reason == "achieved"
    assert "| PO-0002 | Hangzhou Tea Supply Co." in answer and "No results." in answer
    assert answer.count("Hangzhou Tea Supply Co.") == 1
