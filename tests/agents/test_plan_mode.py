"""Plan mode end to end: the real websocket consumer and run manager, the plan engine, the scripted LLM.

Agents in ``plan`` mode plan, run the steps, judge the round and re-plan; ``auto`` agents ask the fast
model once per message which mode to use. Each call goes to the organisation's endpoint of its role.
"""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from agents import runtime
from agents.demo_model import LABEL_ZH, DemoLLM
from agents.engine.events import EventStream
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import FOLLOW_UP_REASONING, PlanAgent
from agents.engine.plan.router import route_execution_mode
from agents.engine.tools import FunctionTool, ToolRegistry
from agents.models import Message, Run
from agents.runs.manager import run_manager
from platform_core.models import Role
from tests.agents.factories import AgentFactory, ConversationFactory, MessageFactory, ModelConfigFactory
from tests.agents.plan_script import (
    ANALYZER,
    CHAT,
    PLANNER,
    ROUTER,
    SUMMARY,
    SYNTHESIS,
    PlanModel,
    step,
    verdict,
)
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

ORDERS = {"7": "shipped", "8": "awaiting payment", "9": "cancelled"}


class OrderTools:
    """Tools every run gets: an order look-up, one that waits for the test's go, and a slow report."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = asyncio.Event()
        self.holding = asyncio.Event()

    async def lookup_order(self, order_id: str) -> str:
        self.calls.append(order_id)
        return f"order {order_id}: {ORDERS.get(order_id, 'unknown')}"

    async def held_lookup(self, order_id: str) -> str:
        self.holding.set()
        await self.release.wait()
        return await self.lookup_order(order_id)

    async def slow_report(self) -> str:
        self.holding.set()
        await asyncio.sleep(60)
        return "never"

    def factory(self, blueprint):
        schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
        return [
            FunctionTool("lookup_order", "Look up an order", self.lookup_order, parameters=schema),
            FunctionTool("held_lookup", "Look up an order (slowly)", self.held_lookup, parameters=schema),
            FunctionTool("slow_report", "A slow report", self.slow_report),
        ]


@pytest.fixture
def order_tools(monkeypatch):
    tools = OrderTools()
    monkeypatch.setattr(runtime, "connector_tools_for_run", tools.factory)
    return tools


def build_chat(llm_base_url: str, *, mode: str = "plan", roles: dict[str, str] | None = None):
    """An org whose default endpoint is ``general-model`` (plus one endpoint per extra role), a member and
    a conversation with an agent in ``mode``."""
    org = OrganizationFactory(slug="acme")
    user = member_of(org, Role.MEMBER, username="mia")
    ModelConfigFactory(organization=org, base_url=llm_base_url, model="general-model", is_default=True)
    for role, model in (roles or {}).items():
        ModelConfigFactory(organization=org, base_url=llm_base_url, model=model, role=role)
    agent = AgentFactory(
        organization=org, instructions="Be brief.", execution_mode=mode, completion_check=False
    )
    conversation = ConversationFactory(organization=org, user=user, agent=agent)
    return user, conversation


async def open_chat(user, conversation):
    ws, connected, code = await connect(conversation.pk, await bearer_for(user))
    assert connected and code is None
    return ws


async def finish_runs():
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


def plan_events(frames, kind=None):
    return [f["data"] for f in frames if f["event"] == "plan" and (kind is None or f["data"]["type"] == kind)]


def phases(frames):
    return [(f["data"]["phase"], f["data"].get("round")) for f in frames if f["event"] == "phase"]


def step_statuses(frames, round_):
    return [(d["step_id"], d["status"]) for d in plan_events(frames, "step") if d["round"] == round_]


@pytest.fixture
def follow_up_queued(monkeypatch):
    """An event set once a follow-up reaches a run's interrupt queue."""
    queued = asyncio.Event()
    put = FollowUpQueue.put

    def put_and_signal(self, content):
        put(self, content)
        queued.set()

    monkeypatch.setattr(FollowUpQueue, "put", put_and_signal)
    return queued


ANSWER = "Order **7** has shipped and order **8** is awaiting payment."


def two_round_model() -> PlanModel:
    return PlanModel(
        plans=[
            [
                step("1", "Look up order 7", tool="lookup_order", model="fast"),
                step("2", "Look up order 8", tool="lookup_order"),
            ],
            [
                step("1", "Look up order 8 by its id", tool="lookup_order"),
                step("2", "Compare both orders", deps=["1"], model="smart"),
            ],
        ],
        verdicts=[
            verdict(False, 0.3, "Order 8 was not read."),
            verdict(True, 0.9, "Both orders are known.", "Order 7 shipped; order 8 awaits payment."),
        ],
        steps={
            "Look up order 7": [
                tool_calls(call("lookup_order", {"order_id": "7"}, id="o7")),
                text("Order 7: shipped."),
            ],
            "Look up order 8": [text("I could not tell which order 8 is.")],
            "Look up order 8 by its id": [
                tool_calls(call("lookup_order", {"order_id": "8"}, id="o8")),
                text("Order 8: awaiting payment."),
            ],
            "Compare both orders": [text("Order 7 shipped; order 8 awaits payment.")],
        },
        answer=ANSWER,
    )


async def test_a_plan_agent_plans_runs_judges_and_replans_then_streams_the_answer(scripted_llm, order_tools):
    # given an agent in plan mode whose first round misses order 8
    model = two_round_model().install(scripted_llm)
    user, conversation = await database_sync_to_async(build_chat)(scripted_llm.base_url)
    ws = await open_chat(user, conversation)

    # when the user asks
    await ws.send_json_to({"type": "message", "content": "Where are orders 7 and 8?"})
    frames = await frames_until_done(ws)
    await finish_runs()

    # then the stream shows both rounds: plan, execute, analyse, re-plan with the reason, execute, analyse
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    assert phases(frames) == [
        ("planning", 1),
        ("executing", 1),
        ("analyzing", 1),
        ("replanning", 2),
        ("executing", 2),
        ("analyzing", 2),
    ]
    replanning = next(
        f["data"] for f in frames if f["event"] == "phase" and f["data"]["phase"] == "replanning"
    )
    assert replanning["reasoning"] == "Order 8 was not read."
    dags = plan_events(frames, "dag")
    assert [(d["round"], [s["task"] for s in d["steps"]]) for d in dags] == [
        (1, ["Look up order 7", "Look up order 8"]),
        (2, ["Look up order 8 by its id", "Compare both orders"]),
    ]
    assert dags[0]["steps"][0] == {
        "id": "1",
        "task": "Look up order 7",
        "dependencies": [],
        "tool_hint": "lookup_order",
        "model_hint": "fast",
        "status": "pending",
    }
    # and each step's tool calls are reported on the step; the dependent step runs after its dependency
    calls = [
        (d["round"], d["step_id"], d["status"], d["tool_call_id"])
        for d in plan_events(frames, "step_iteration")
    ]
    assert calls == [
        (1, "1", "start", "r1.1.o7"),
        (1, "1", "done", "r1.1.o7"),
        (2, "1", "start", "r2.1.o8"),
        (2, "1", "done", "r2.1.o8"),
    ]
    done_call = plan_events(frames, "step_iteration")[1]
    assert done_call["observation"] == "order 7: shipped" and done_call["outcome"] == "ok"
    round_two = step_statuses(frames, 2)
    assert round_two.index(("2", "running")) > round_two.index(("1", "done"))
    finished = {(d["round"], d["step_id"]): d for d in plan_events(frames, "step") if d["status"] == "done"}
    assert finished[(1, "1")]["result"] == "Order 7: shipped." and finished[(1, "1")]["elapsed"] >= 0
    assert order_tools.calls == ["7", "8"]

    # and the re-planner saw the first round
    second_plan = model.bodies(PLANNER)[1]["messages"][1]["content"]
    assert "Order 8 was not read." in second_plan and "Order 7: shipped." in second_plan

    # and the answer streams, and the run is recorded like a ReAct run
    answer = [f["data"] for f in frames if f["event"] == "answer"]
    assert answer[0] == {"status": "start"} and answer[-1]["content"] == ANSWER
    done = frames[-1]["data"]
    assert done["answer"] == ANSWER and done["stop_reason"] == "achieved" and not done["cancelled"]
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert run.status == "done" and run.answer == ANSWER and run.stop_reason == "achieved"
    assert run.iterations == done["iterations"] > 0 and run.usage["calls"] > 0
    assert await Message.objects.filter(run=run, role="assistant", content=ANSWER).aexists()
    assert model.kinds().count(ROUTER) == 0  # plan mode never asks the router
    await ws.disconnect()


async def test_a_follow_up_during_a_plan_stops_the_round_and_replans_with_it(
    scripted_llm, order_tools, follow_up_queued
):
    # given a plan whose first step waits until the test lets it go
    model = PlanModel(
        plans=[
            [
                step("1", "Look up order 7", tool="held_lookup"),
                step("2", "Summarise the orders", deps=["1"]),
            ],
            [step("1", "Look up order 9", tool="lookup_order"), step("2", "List both orders", deps=["1"])],
        ],
        verdicts=[verdict(True, 1.0, "Done.")],
        steps={
            "Look up order 7": [
                tool_calls(call("held_lookup", {"order_id": "7"}, id="h7")),
                text("Order 7: shipped."),
            ],
            "Summarise the orders": [text("never runs")],
            "Look up order 9": [
                tool_calls(call("lookup_order", {"order_id": "9"}, id="o9")),
                text("Order 9: cancelled."),
            ],
            "List both orders": [text("Order 7 shipped; order 9 was cancelled.")],
        },
        answer="Order 7 shipped; order 9 was cancelled.",
    ).install(scripted_llm)
    user, conversation = await database_sync_to_async(build_chat)(scripted_llm.base_url)
    ws = await open_chat(user, conversation)
    await ws.send_json_to({"type": "message", "content": "Where is order 7?"})
    await frames_until(ws, lambda f: f["data"].get("type") == "step_iteration")
    await order_tools.holding.wait()

    # when the user adds a follow-up while the step runs, and the step then finishes
    await ws.send_json_to({"type": "message", "content": "Also check order 9."})
    await follow_up_queued.wait()
    order_tools.release.set()
    frames = await frames_until_done(ws)
    await finish_runs()

    # then the running step finished, the pending one was skipped, and the plan was made again with the
    # follow-up, without judging the interrupted round
    assert ("1", "done") in step_statuses(frames, 1) and ("2", "skipped") in step_statuses(frames, 1)
    assert [f["data"]["content"] for f in frames if f["event"] == "inject"] == ["Also check order 9."]
    assert ("replanning", 2) in phases(frames)
    replanning = next(
        f["data"] for f in frames if f["event"] == "phase" and f["data"]["phase"] == "replanning"
    )
    assert replanning["reasoning"] == FOLLOW_UP_REASONING
    assert model.kinds().count(ANALYZER) == 1  # only the second round was judged
    assert "Also check order 9." in model.bodies(PLANNER)[1]["messages"][1]["content"]
    assert order_tools.calls == ["7", "9"]
    assert frames[-1]["data"]["answer"] == "Order 7 shipped; order 9 was cancelled."
    assert await Message.objects.filter(content="Also check order 9.", injected=True).aexists()
    await ws.disconnect()


async def test_cancel_stops_a_running_plan_at_once(scripted_llm, order_tools):
    model = PlanModel(
        plans=[[step("1", "Build the report", tool="slow_report"), step("2", "Send it", deps=["1"])]],
        verdicts=[verdict(True, 1.0, "Done.")],
        steps={"Build the report": [tool_calls(call("slow_report", {}, id="r1")), text("never")]},
    ).install(scripted_llm)
    user, conversation = await database_sync_to_async(build_chat)(scripted_llm.base_url)
    ws = await open_chat(user, conversation)
    await ws.send_json_to({"type": "message", "content": "Build and send the report."})
    await order_tools.holding.wait()

    await ws.send_json_to({"type": "cancel"})
    frames = await frames_until_done(ws)
    await finish_runs()

    assert frames[-1]["data"]["cancelled"] is True
    statuses = dict(step_statuses(frames, 1))
    assert statuses["1"] == "cancelled" and statuses.get("2", "pending") in {
        "pending",
        "skipped",
        "cancelled",
    }
    assert ANALYZER not in model.kinds() and SYNTHESIS not in model.kinds()
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert run.status == "cancelled" and run.answer == ""
    await ws.disconnect()


async def test_auto_mode_asks_the_fast_model_once_and_plans_when_it_says_plan(scripted_llm, order_tools):
    model = two_round_model()
    model.mode = "plan"
    model.install(scripted_llm)
    user, conversation = await database_sync_to_async(
        lambda: build_chat(scripted_llm.base_url, mode="auto", roles={"fast": "fast-model"})
    )()
    ws = await open_chat(user, conversation)
    await ws.send_json_to({"type": "message", "content": "Where are orders 7 and 8?"})
    frames = await frames_until_done(ws)
    await finish_runs()

    assert model.kinds()[0] == ROUTER and model.kinds().count(ROUTER) == 1
    assert model.models(ROUTER) == ["fast-model"]
    router_request = model.bodies(ROUTER)[0]
    assert router_request["messages"][-1]["content"] == "Where are orders 7 and 8?"
    assert len(plan_events(frames, "dag")) == 2 and frames[-1]["data"]["answer"] == ANSWER
    # the router's call counts towards the run's usage
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert run.usage["calls"] == len([k for k in model.kinds() if k != SYNTHESIS])
    await ws.disconnect()


@pytest.mark.parametrize("router", ["react", None], ids=["router-says-react", "router-fails"])
async def test_auto_mode_answers_directly_when_the_router_says_react_or_fails(
    scripted_llm, order_tools, router
):
    model = PlanModel(
        mode=router,
        chat=[tool_calls(call("lookup_order", {"order_id": "7"}, id="c7")), text("Order 7 has shipped.")],
        answer="Order **7** has shipped.",
    ).install(scripted_llm)
    user, conversation = await database_sync_to_async(
        lambda: build_chat(scripted_llm.base_url, mode="auto", roles={"fast": "fast-model"})
    )()
    ws = await open_chat(user, conversation)
    await ws.send_json_to({"type": "message", "content": "Where is order 7?"})
    frames = await frames_until_done(ws)
    await finish_runs()

    assert set(model.models(ROUTER)) == {"fast-model"}
    assert PLANNER not in model.kinds() and plan_events(frames) == []
    assert model.models(CHAT) == ["general-model", "general-model"]
    iterations = [f["data"] for f in frames if f["data"].get("type") == "iteration"]
    assert [(d["status"], d["tool_call_id"]) for d in iterations] == [("start", "c7"), ("done", "c7")]
    assert frames[-1]["data"]["answer"] == "Order **7** has shipped." and order_tools.calls == ["7"]
    await ws.disconnect()


def build_roles_world(llm_base_url: str):
    """The agent names its own general endpoint; the org has fast and smart endpoints, an inactive
    reasoning one, and another organisation has a default smart endpoint; the conversation is long."""
    org = OrganizationFactory(slug="acme")
    other = OrganizationFactory(slug="globex")
    user = member_of(org, Role.MEMBER, username="mia")

    def endpoint(organization, model, role, **extra):
        return ModelConfigFactory(
            organization=organization, base_url=llm_base_url, model=model, role=role, **extra
        )

    own = endpoint(org, "general-model", "general")
    endpoint(org, "org-default-model", "general", is_default=True)
    endpoint(org, "fast-model", "fast")
    endpoint(org, "smart-model", "smart")
    endpoint(org, "old-reasoning-model", "reasoning", active=False)
    endpoint(other, "globex-smart-model", "smart", is_default=True)
    agent = AgentFactory(organization=org, execution_mode="plan", model_config=own, completion_check=False)
    conversation = ConversationFactory(organization=org, user=user, agent=agent)
    for index in range(8):
        MessageFactory(conversation=conversation, role="user", content=f"Tell me about order {index}. " * 80)
        MessageFactory(conversation=conversation, role="assistant", content=f"Order {index} is fine. " * 80)
    return user, conversation


async def test_each_call_of_a_plan_goes_to_the_endpoint_of_its_role(scripted_llm, order_tools):
    # given fast and smart endpoints, no active reasoning endpoint, and a plan with hinted steps
    model = PlanModel(
        plans=[
            [
                step("1", "Look up order 7", model="fast"),
                step("2", "Think hard about order 8", model="reasoning"),
                step("3", "Write it up", deps=["1", "2"]),
            ]
        ],
        verdicts=[verdict(True, 0.95, "Done.")],
        steps={
            "Look up order 7": [text("Order 7: shipped.")],
            "Think hard about order 8": [text("Order 8: awaiting payment.")],
            "Write it up": [text("Both are known.")],
        },
    ).install(scripted_llm)
    user, conversation = await database_sync_to_async(lambda: build_roles_world(scripted_llm.base_url))()
    ws = await open_chat(user, conversation)
    await ws.send_json_to({"type": "message", "content": "Where are orders 7 and 8?"})
    frames = await frames_until_done(ws)
    await finish_runs()

    # then planning and judging ask the smart model, the long history is summarised by the fast one,
    # each step asks the model of its hint (reasoning falls back to general), and the answer comes from
    # the agent's own endpoint
    assert model.models(SUMMARY) == ["fast-model"]
    assert model.models(PLANNER) == ["smart-model"] and model.models(ANALYZER) == ["smart-model"]
    assert model.step_models() == {
        "Look up order 7": "fast-model",
        "Think hard about order 8": "general-model",
        "Write it up": "general-model",
    }
    assert model.models(SYNTHESIS) == ["general-model"]
    planner_input = model.bodies(PLANNER)[0]["messages"][1]["content"]
    assert "Earlier, the user asked about orders 1 to 6." in planner_input
    seen = {m for _, m, _ in model.requests}
    assert not seen & {"org-default-model", "old-reasoning-model", "globex-smart-model"}
    assert frames[-1]["data"]["stop_reason"] == "achieved"
    await ws.disconnect()


def test_every_role_without_an_active_endpoint_of_its_own_uses_the_general_one(db):
    org = OrganizationFactory(slug="acme")
    own = ModelConfigFactory(organization=org, model="general-model", base_url="http://127.0.0.1:9/v1")
    ModelConfigFactory(organization=org, model="smart-a", role="smart", base_url="http://127.0.0.1:9/v1")
    ModelConfigFactory(
        organization=org,
        model="smart-default",
        role="smart",
        is_default=True,
        base_url="http://127.0.0.1:9/v1",
    )
    ModelConfigFactory(organization=org, model="fast-off", role="fast", active=False)
    agent = AgentFactory(organization=org, model_config=own)

    endpoints = runtime.endpoints_by_role(agent)

    assert {role: e.model for role, e in endpoints.items()} == {
        "general": "general-model",
        "fast": "general-model",
        "smart": "smart-default",  # the organisation's default of the role comes first
        "reasoning": "general-model",
    }


async def test_the_offline_demo_model_makes_a_labelled_two_step_plan_and_answers_from_its_look_up():
    calls = []

    async def get_purchase_order(order_id: int) -> str:
        calls.append(order_id)
        return f'{{"id": {order_id}, "supplier": "Nordic Office AB", "status": "draft"}}'

    async def list_payments() -> str:
        return "[]"

    schema = {"type": "object", "properties": {"order_id": {"type": "integer"}}, "required": ["order_id"]}
    tools = ToolRegistry(
        [
            FunctionTool(
                "erp__get_purchase_order", "Get one purchase order", get_purchase_order, parameters=schema
            ),
            FunctionTool("erp__list_payments", "List payments", list_payments),
        ]
    )
    demo = DemoLLM(stream_delay=0)
    agent = PlanAgent(ModelRegistry({"general": demo}), tools)
    stream = EventStream()

    result = await agent.run("查看采购订单 3", on_event=stream)
    answer = await agent.stream_synthesize(result, on_event=stream)
    stream.close()
    events = [e async for e in stream]

    dag = next(e.data for e in events if e.channel == "plan" and e.data["type"] == "dag")
    assert [(s["id"], s["dependencies"], s["tool_hint"]) for s in dag["steps"]] == [
        ("1", [], "erp__get_purchase_order"),
        ("2", ["1"], None),
    ]
    assert all(
        "采购订单 3" in s["task"] or "第 1 步" in s["task"] for s in dag["steps"]
    )  # the goal's language
    assert calls == [3]  # one look-up; the summarising step calls nothing
    assert result.stop_reason == "achieved" and result.rounds == 1
    assert answer.startswith(f"**{LABEL_ZH}**") and "Nordic Office AB" in answer
    assert answer.count("Nordic Office AB") == 1


async def test_the_offline_demo_model_routes_only_questions_with_several_parts_to_plan_mode():
    demo = DemoLLM(stream_delay=0)
    assert await route_execution_mode(demo, "Show purchase order 3") == "react"
    assert await route_execution_mode(demo, "Compare purchase order 3 and the payments") == "plan"
