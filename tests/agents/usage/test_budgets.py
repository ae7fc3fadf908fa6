"""Budgets as guard rails: checked before every model call, a run that reaches one stops cleanly with a
``budget_exceeded`` done naming it (in the user's language), and concurrent runs never take a budget more
than one call past its limit, with the counts in the database or in Redis."""

from __future__ import annotations

import asyncio
import dataclasses
from decimal import Decimal

import pytest
import redis
from channels.db import database_sync_to_async

from agents import runtime
from agents.models import Budget, Run, UsageRecord
from agents.runs.manager import run_manager
from agents.usage.counters import KEY_PREFIX
from platform_core.models import AuditLog
from tests.agents.usage.helpers import ReActModel, ask, build_org, conversation_for, done_of, order_tools
from tests.agents.ws_helpers import bearer_for, connect, frames_until_done
from tests.xdist_isolation import redis_url_for_worker, worker_index

pytestmark = pytest.mark.django_db(transaction=True)

# db 7, one of its own per pytest-xdist worker (the workers' databases hand out the same ids)
REDIS_URL = redis_url_for_worker("redis://127.0.0.1:6379/7", worker_index())
SMALL = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}


@pytest.fixture(params=["database", "redis"])
def counts_in(request, settings):
    """Each budget test runs with the counts in the database and in Redis (db 7, emptied first)."""
    if request.param == "redis":
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"{KEY_PREFIX}:*"):
            client.delete(key)
        client.close()
        settings.REDIS_URL = REDIS_URL
    else:
        settings.REDIS_URL = ""
    return request.param


async def finish_runs() -> None:
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def user_budget(org, user, *, limit: int, name: str = "Mia's daily tokens", **extra) -> Budget:
    return Budget.objects.create(
        organization=org,
        name=name,
        scope="user",
        user=user,
        metric="tokens",
        period="day",
        limit=limit,
        **extra,
    )


def _budgeted_conversation(llm_base_url: str) -> tuple:
    """Mia, with a budget of 2,000 tokens a day and an agent capped at 200 output tokens a call, and her
    conversation with it (sync): ``(user, conversation)``."""
    org, user, agent, _config = build_org(llm_base_url, max_output=200)
    user_budget(org, user, limit=2000)
    return user, conversation_for(org, user, agent)


EN_LABEL = "the daily token budget “Mia's daily tokens” of the user (2000 tokens) is used up"
ZH_LABEL = "用户的每日Token预算「Mia's daily tokens」（2000 tokens）已用完"
EN_HEAD = f"I stopped before the task was finished: {EN_LABEL}."
ZH_HEAD = f"任务尚未完成就已停止：{ZH_LABEL}。"
# (question, the user's interface language, whether the stop message is Chinese): the message follows the
# interface language, whatever the question's.
LANGUAGES = [
    ("Where is order 7?", "en", False),
    ("订单 7 在哪里？", "zh-hans", True),
    ("Where is order 7?", "zh-hans", True),
    ("订单 7 在哪里？", "en", False),
]
LANGUAGE_IDS = ["en-en", "zh-zh", "en-question-zh-interface", "zh-question-en-interface"]


@pytest.mark.parametrize(("question", "interface", "chinese"), LANGUAGES, ids=LANGUAGE_IDS)
async def test_a_budget_reached_mid_run_stops_before_the_next_model_call(
    scripted_llm, monkeypatch, counts_in, question, interface, chinese
):
    # given a user budget of 2,000 tokens a day and a model that calls a tool forever, 1,200 tokens a call
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    model = ReActModel(tool_turns=None).install(scripted_llm)
    user, conversation = await database_sync_to_async(_budgeted_conversation)(scripted_llm.base_url)

    # when the user asks, in their interface language
    frames = await ask(user, conversation, question, accept_language=interface)
    await finish_runs()

    # then the second call took the budget past its limit, and no request came after it: no third turn,
    # no synthesis
    assert model.kinds == ["tool_loop", "tool_loop"]
    assert len(scripted_llm.requests) == 2
    # and the run stopped cleanly with a done naming the budget, in the user's interface language
    done = done_of(frames)
    assert done["stop_reason"] == "budget_exceeded" and done["cancelled"] is False
    assert (ZH_LABEL if chinese else EN_LABEL) in done["answer"]
    assert (EN_LABEL if chinese else ZH_LABEL) not in done["answer"]
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert (run.status, run.stop_reason) == ("done", "budget_exceeded")
    assert await UsageRecord.objects.unscoped().filter(run=run).acount() == 2


async def test_the_stop_message_follows_the_language_chosen_in_the_web_app_over_the_browsers(
    scripted_llm, monkeypatch
):
    # given a user budget of 2,000 tokens a day and a model that calls a tool forever
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=None).install(scripted_llm)
    user, conversation = await database_sync_to_async(_budgeted_conversation)(scripted_llm.base_url)

    # when the user, who chose Chinese in the web app's language switch (an English browser), asks in English
    frames = await ask(
        user, conversation, "Where is order 7?", accept_language="en", cookie="django_language=zh-hans"
    )
    await finish_runs()

    # then the budget's stop message is Chinese
    assert ZH_LABEL in done_of(frames)["answer"]


@pytest.mark.parametrize(("question", "interface", "chinese"), LANGUAGES, ids=LANGUAGE_IDS)
async def test_a_budget_reached_at_the_answer_synthesis_stops_the_run_as_the_tool_loop_does(
    scripted_llm, monkeypatch, counts_in, question, interface, chinese
):
    # given a user budget of 2,000 tokens a day, 1,200 tokens a call, and a model that looks up the order
    # once, then answers
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    model = ReActModel(tool_turns=1, answer="Order 7 has shipped.").install(scripted_llm)
    user, conversation = await database_sync_to_async(_budgeted_conversation)(scripted_llm.base_url)

    # when the user asks, in their interface language
    frames = await ask(user, conversation, question, accept_language=interface)
    await finish_runs()

    # then the tool loop's two calls went through and the synthesis, the third, was refused: never sent
    assert model.kinds == ["tool_loop", "tool_loop"]
    assert len(scripted_llm.requests) == 2
    # and the run stopped as a budget stops the tool loop: budget_exceeded, the budget named first in the
    # user's interface language, then what the loop had found
    head = ZH_HEAD if chinese else EN_HEAD
    done = done_of(frames)
    assert done["stop_reason"] == "budget_exceeded" and done["cancelled"] is False
    assert done["answer"] == f"{head}\n\nOrder 7 has shipped."
    assert set(done) == {"answer", "iterations", "usage", "elapsed", "cancelled", "stop_reason"}
    answer_done = [f["data"] for f in frames if f["event"] == "answer" and f["data"]["status"] == "done"]
    assert answer_done == [{"status": "done", "content": done["answer"], "fallback": True}]
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert (run.status, run.stop_reason, run.answer) == ("done", "budget_exceeded", done["answer"])


async def test_an_agent_budget_in_cost_stops_its_runs_and_an_other_agent_runs_on(
    scripted_llm, monkeypatch, counts_in
):
    # given a cost budget of 0.005 USD a month on one agent (a call costs 0.003 USD)
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=None).install(scripted_llm)

    def given():
        from tests.agents.factories import AgentFactory

        org, user, agent, _config = build_org(scripted_llm.base_url, max_output=200)
        Budget.objects.create(
            organization=org,
            name="Buyer bot",
            scope="agent",
            agent=agent,
            metric="cost",
            period="month",
            limit=Decimal("0.005"),
            currency="USD",
            time_zone="Asia/Shanghai",
        )
        other = AgentFactory(organization=org, completion_check=False, max_iterations=3)
        return user, conversation_for(org, user, agent), conversation_for(org, user, other)

    user, capped, free = await database_sync_to_async(given)()

    frames = await ask(user, capped, "Where is order 7?")
    await finish_runs()
    assert done_of(frames)["stop_reason"] == "budget_exceeded"
    assert "0.005 USD" in done_of(frames)["answer"]
    run = await Run.objects.unscoped().aget(conversation=capped)
    assert await UsageRecord.objects.unscoped().filter(run=run).acount() == 2

    # the other agent's run is not counted by that budget: it goes to its iteration limit
    frames = await ask(user, free, "Where is order 7?")
    await finish_runs()
    assert done_of(frames)["stop_reason"] == "max_iterations"


async def test_concurrent_runs_of_one_user_never_overshoot_the_budget_by_more_than_one_call(
    scripted_llm, monkeypatch, counts_in, settings
):
    """Four runs of the same user, each calling the model again and again, share a budget of 1,000 tokens.

    The bound (see :mod:`agents.usage.counters`): a call is admitted only when, atomically, its estimate
    fits beside what is used and reserved, or when nothing else is under way and something is left. Every
    call here uses 60 tokens, and its estimate is at least the endpoint's 100-token output limit, so a call
    admitted by the first rule never takes the budget past 1,000; a call admitted by the second rule runs
    alone and starts below 1,000. So the total is below 1,000 + 60, one call's worth, however the four
    runs interleave; and every run ends by the budget (none reaches its iteration limit first).
    """
    settings.AGENT_MAX_CONCURRENT_RUNS_PER_USER = 4
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=None, usage=SMALL).install(scripted_llm, count=400)

    def given():
        org, user, agent, _config = build_org(scripted_llm.base_url, max_output=100)
        agent.max_iterations = 50
        agent.save()
        user_budget(org, user, limit=1000)
        return user, [conversation_for(org, user, agent) for _ in range(4)]

    user, conversations = await database_sync_to_async(given)()

    # when the four runs go at once
    token = await bearer_for(user)
    sockets = []
    for conversation in conversations:
        ws, connected, _code = await connect(conversation.pk, token)
        assert connected
        sockets.append(ws)
    await asyncio.gather(
        *(ws.send_json_to({"type": "message", "content": "Where is order 7?"}) for ws in sockets)
    )
    results = await asyncio.gather(*(frames_until_done(ws) for ws in sockets))
    await finish_runs()
    for ws in sockets:
        await ws.disconnect()

    # then each stopped by the budget, and all together used less than the limit plus one call
    assert [done_of(frames)["stop_reason"] for frames in results] == ["budget_exceeded"] * 4
    total = sum([r.total_tokens async for r in UsageRecord.objects.unscoped().filter(user=user)])
    assert 1000 - 100 <= total < 1000 + 60
    assert len(scripted_llm.requests) == total // 60


async def test_crossing_the_warning_threshold_writes_one_audit_entry(scripted_llm, monkeypatch, counts_in):
    # given a 2,000-token budget that warns at 50 %
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    ReActModel(tool_turns=None).install(scripted_llm)

    def given():
        org, user, agent, _config = build_org(scripted_llm.base_url, max_output=200)
        budget = user_budget(org, user, limit=2000, warn_percent=50)
        return org, user, budget, conversation_for(org, user, agent)

    org, user, budget, conversation = await database_sync_to_async(given)()

    # when a run takes it past 1,000 tokens (and then past its limit)
    await ask(user, conversation, "Where is order 7?")
    await finish_runs()

    # then the admins were warned once, by an audit entry on the budget
    entries = [e async for e in AuditLog.objects.filter(organization=org, action="budget.warning")]
    assert len(entries) == 1
    assert entries[0].target_id == str(budget.pk)
    assert entries[0].after["used"] == 1200 and entries[0].after["limit"] == 2000


@pytest.mark.parametrize(
    ("interface", "head"),
    [
        ("en", "I stopped before the task was finished: the monthly token budget “Acme”"),
        ("zh-hans", "任务尚未完成就已停止：组织的每月Token预算「Acme」"),
    ],
)
async def test_a_plan_run_stops_at_the_budget_before_the_analyser_and_the_synthesis(
    scripted_llm, monkeypatch, interface, head
):
    # given a plan agent, an organisation budget of 2,000 tokens, 1,200 tokens a call
    from tests.agents.plan_script import ANALYZER, PLANNER, STEP, SYNTHESIS, PlanModel, step
    from tests.fakes.openai_server import call, tool_calls

    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    usage = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}
    plan = PlanModel(
        plans=[[step("1", "Look up order 7", tool="lookup_order")]],
        steps={
            "Look up order 7": [tool_calls(call("lookup_order", {"order_id": "7"}, id="o7"), usage=usage)]
        },
    )

    def reply(body):
        answer = plan(body)
        return dataclasses.replace(answer, usage=usage) if hasattr(answer, "usage") else answer

    scripted_llm.script(*([reply] * 20))

    def given():
        org, user, agent, _config = build_org(scripted_llm.base_url, mode="plan", max_output=200)
        Budget.objects.create(
            organization=org, name="Acme", scope="organization", metric="tokens", period="month", limit=2000
        )
        return user, conversation_for(org, user, agent)

    user, conversation = await database_sync_to_async(given)()

    # when the user asks in English, their interface in ``interface``
    frames = await ask(user, conversation, "Where is order 7?", accept_language=interface)
    await finish_runs()

    # then the planner and the step's first turn were the last calls: no second turn, no analyser, no synthesis
    assert plan.kinds() == [PLANNER, STEP]
    assert ANALYZER not in plan.kinds() and SYNTHESIS not in plan.kinds()
    done = done_of(frames)
    assert done["stop_reason"] == "budget_exceeded"
    assert done["answer"].startswith(head)  # in the user's interface language


async def test_a_new_counter_starts_from_the_periods_stored_usage(scripted_llm, monkeypatch, counts_in):
    """A budget made mid-period (or Redis emptied) counts what the period's rows already used."""
    monkeypatch.setattr(runtime, "connector_tools_for_run", order_tools(1))
    model = ReActModel(tool_turns=None).install(scripted_llm)

    def given():
        org, user, agent, _config = build_org(scripted_llm.base_url, max_output=200)
        UsageRecord.objects.create(organization=org, user=user, purpose="tool_loop", total_tokens=1900)
        UsageRecord.objects.create(organization=org, purpose="tool_loop", total_tokens=5000)  # someone else
        user_budget(org, user, limit=2000)
        return user, conversation_for(org, user, agent)

    user, conversation = await database_sync_to_async(given)()
    frames = await ask(user, conversation, "Where is order 7?")
    await finish_runs()

    # 1,900 of 2,000 were used today: one call fits (nothing else under way), the next does not
    assert model.kinds == ["tool_loop"]
    assert done_of(frames)["stop_reason"] == "budget_exceeded"
