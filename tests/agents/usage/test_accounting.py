"""Accounting: every model call of a run is one UsageRecord row with its tokens (cached and reasoning
included) and its cost, against the organisation, user, agent, endpoint and run; through the real openai
SDK against the scripted server."""

from __future__ import annotations

from decimal import Decimal

import pytest
from channels.db import database_sync_to_async

from agents import runtime
from agents.models import Message, Run, UsageRecord
from agents.runs.manager import run_manager
from tests.agents.plan_script import PlanModel, step, verdict
from tests.agents.usage.helpers import (
    CALL_COST,
    REPORTED,
    ReActModel,
    ask,
    build_org,
    conversation_for,
    done_of,
    order_tools,
)
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


async def finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def rows_of(run: Run) -> list[UsageRecord]:
    return list(UsageRecord.objects.unscoped().filter(run=run).order_by("id"))


async def test_every_model_call_of_a_react_run_is_one_row_with_its_tokens_and_cost(scripted_llm, monkeypatch):
    # given 13 tools (so the run selects its tools first), a priced endpoint and a long history to compact
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(13))
    model = ReActModel(tool_turns=1).install(scripted_llm)

    def given():
        org, user, agent, config = build_org(scripted_llm.base_url, context_window=8192)
        conversation = conversation_for(org, user, agent)
        for n in range(5):  # about 5,000 tokens of history: over the 3,072 the guard allows
            Message.objects.create(
                conversation=conversation, role="user", content=f"question {n} " + "x" * 4000
            )
            Message.objects.create(conversation=conversation, role="assistant", content=f"answer {n}")
        return org, user, agent, config, conversation

    org, user, agent, config, conversation = await database_sync_to_async(given)()

    # when the user asks
    frames = await ask(user, conversation, "Where is order 7?")
    await finish_runs()

    # then each of the run's model calls is one row, in the order made, with the reported tokens
    run = await Run.objects.unscoped().aget(conversation=conversation)
    rows = await database_sync_to_async(rows_of)(run)
    assert [r.purpose for r in rows] == model.kinds
    assert {"selection", "compaction", "tool_loop", "synthesis"} <= set(model.kinds)
    for row in rows:
        assert (row.prompt_tokens, row.completion_tokens, row.total_tokens) == (1000, 200, 1200)
        assert (row.cached_tokens, row.reasoning_tokens) == (400, 50)
        assert row.estimated is False
        # and the cost, at the endpoint's prices, kept with the row
        assert (row.cost, row.currency) == (CALL_COST, "USD")
        assert (row.organization_id, row.user_id, row.agent_id) == (org.pk, user.pk, agent.pk)
        assert row.model_config_id == config.pk and row.model == "priced-model"
        # and the endpoint's name, so the dashboard can still name it once the endpoint is deleted
        assert row.model_config_name == config.name
    # and the run's done event counts the same calls and tokens
    usage = done_of(frames)["usage"]
    assert usage["calls"] == len(rows)
    assert usage["cached_tokens"] == 400 * len(rows) and usage["reasoning_tokens"] == 50 * len(rows)


async def test_a_plan_run_records_the_router_planner_steps_analyser_and_synthesis(scripted_llm, monkeypatch):
    # given an auto agent routed to plan mode, one step with a tool call, and every reply with usage
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    plan = PlanModel(
        mode="plan",
        plans=[[step("1", "Look up order 7", tool="lookup_order")]],
        verdicts=[verdict(True, 0.9, "Known.", "Order 7 shipped.")],
        steps={
            "Look up order 7": [
                tool_calls(call("lookup_order", {"order_id": "7"}, id="o7"), usage=REPORTED),
                text("Order 7: shipped.", usage=REPORTED),
            ]
        },
        answer="Order 7 has shipped.",
    )
    scripted_llm.script(*([_with_usage(plan)] * 30))

    def given():
        org, user, agent, config = build_org(scripted_llm.base_url, mode="auto")
        return org, user, conversation_for(org, user, agent)

    org, user, conversation = await database_sync_to_async(given)()

    # when the user asks
    frames = await ask(user, conversation, "Where is order 7?")
    await finish_runs()

    # then the rows name each call's purpose: the router, the planner, the step's two turns, the
    # analyser and the streamed synthesis
    run = await Run.objects.unscoped().aget(conversation=conversation)
    rows = await database_sync_to_async(rows_of)(run)
    assert sorted(r.purpose for r in rows) == sorted(
        ["router", "planner", "tool_loop", "tool_loop", "analyser", "synthesis"]
    )
    assert all(r.total_tokens == 1200 and r.cost == CALL_COST for r in rows)
    assert done_of(frames)["usage"]["calls"] == len(rows)


def _with_usage(plan: PlanModel):
    """The plan model's replies, each reporting :data:`REPORTED` (the step replies carry it already)."""
    from dataclasses import replace

    def reply(body):
        answer = plan(body)
        return replace(answer, usage=REPORTED) if hasattr(answer, "usage") else answer

    return reply


async def test_an_endpoint_without_prices_records_tokens_with_an_unknown_cost(scripted_llm, monkeypatch):
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=0).install(scripted_llm)

    def given():
        org, user, agent, config = build_org(scripted_llm.base_url)
        config.price_input = config.price_output = None
        config.save()
        return user, conversation_for(org, user, agent)

    user, conversation = await database_sync_to_async(given)()
    await ask(user, conversation, "Hello")
    await finish_runs()

    run = await Run.objects.unscoped().aget(conversation=conversation)
    rows = await database_sync_to_async(rows_of)(run)
    assert [r.purpose for r in rows] == ["tool_loop", "synthesis"]
    assert all(r.cost is None and r.currency == "" and r.total_tokens == 1200 for r in rows)


def test_cost_counts_cached_tokens_at_the_cached_price_and_reasoning_as_output():
    from agents.engine.completion import Usage
    from agents.usage.pricing import Prices

    prices = Prices.of(input=Decimal(2), output=Decimal(8), cached_input=Decimal("0.5"), currency="usd")
    usage = Usage(1000, 200, 1200, calls=1, cached_tokens=400, reasoning_tokens=50)
    assert prices is not None and prices.currency == "USD"
    assert prices.cost(usage) == Decimal("0.003")
    # without a cached price, cached tokens cost the input price
    plain = Prices.of(input=Decimal(2), output=Decimal(8), cached_input=None, currency="USD")
    assert plain is not None and plain.cost(usage) == Decimal("0.0036")
    assert Prices.of(input=None, output=Decimal(8), cached_input=None, currency="USD") is None
