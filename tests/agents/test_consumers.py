"""The conversation websocket end to end: real ASGI app, real engine, the scripted LLM over HTTP."""

from __future__ import annotations

import asyncio
import time

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from agents import runtime
from agents.engine.tools import FunctionTool
from agents.models import Message, Run, RunEvent
from agents.runs.manager import run_manager
from platform_core.models import Role
from tests.agents.factories import ConversationFactory
from tests.agents.ws_helpers import bearer_for, connect, frames_until, frames_until_done, next_frame
from tests.factories import OrganizationFactory, member_of
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

ORDERS = {"7": "shipped", "8": "awaiting payment"}


@pytest.fixture
def order_tools(monkeypatch):
    """Two tools the agent can call, registered for every run like connector tools are."""
    calls: list[tuple[str, dict]] = []

    async def lookup_order(order_id: str) -> str:
        calls.append(("lookup_order", {"order_id": order_id}))
        return f"order {order_id}: {ORDERS.get(order_id, 'unknown')}"

    async def slow_report() -> str:
        calls.append(("slow_report", {}))
        await asyncio.sleep(30)
        return "never"

    def factory(blueprint):
        schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
        return [
            FunctionTool("lookup_order", "Look up an order", lookup_order, parameters=schema),
            FunctionTool("slow_report", "A slow report", slow_report),
        ]

    monkeypatch.setattr(runtime, "connector_tools_for_run", factory)
    return calls


async def _setup(chat):
    user, conversation = await database_sync_to_async(chat)()
    token = await bearer_for(user)
    return user, conversation, token


async def _finish_runs():
    for run_id in list(run_manager.runs):
        await run_manager.wait(run_id)


async def test_a_question_that_needs_two_tool_calls_streams_the_specs_events_in_order(
    chat, scripted_llm, order_tools
):
    scripted_llm.script(
        tool_calls(
            call("lookup_order", {"order_id": "7"}, id="c1"), call("lookup_order", {"order_id": "8"}, id="c2")
        ),
        text("Order 7 shipped; order 8 awaits payment."),
        text("Order **7** has shipped and order **8** is awaiting payment.", chunk_size=8),
    )
    _, conversation, token = await _setup(chat)
    ws, connected, code = await connect(conversation.pk, token)
    assert connected and code is None
    await ws.send_json_to({"type": "message", "content": "Where are orders 7 and 8?"})
    frames = await frames_until_done(ws)
    await _finish_runs()

    seqs = [f["seq"] for f in frames]
    assert seqs == list(range(1, len(frames) + 1))
    run_ids = {f["run_id"] for f in frames}
    assert len(run_ids) == 1
    kinds = [(f["event"], f["data"].get("type"), f["data"].get("status")) for f in frames]
    assert kinds[:6] == [
        ("step", "thinking", "start"),
        ("step", "thinking", "done"),
        ("step", "iteration", "start"),
        ("step", "iteration", "start"),
        ("step", "iteration", "done"),
        ("step", "iteration", "done"),
    ]
    done_iterations = [
        f["data"] for f in frames if f["data"].get("type") == "iteration" and f["data"]["status"] == "done"
    ]
    assert {d["tool_call_id"]: d["observation"] for d in done_iterations} == {
        "c1": "order 7: shipped",
        "c2": "order 8: awaiting payment",
    }
    assert all(
        d["error"] is None and d["iter_elapsed"] >= 0 and d["tool_name"] == "lookup_order"
        for d in done_iterations
    )
    assert ("step", "answer", "start") in kinds
    answer_events = [f["data"] for f in frames if f["event"] == "answer"]
    assert answer_events[0] == {"status": "start"}
    assert answer_events[-1]["status"] == "done"
    streamed = "".join(d["content"] for d in answer_events if d["status"] == "delta")
    assert streamed == "Order **7** has shipped and order **8** is awaiting payment."
    # (pieces that reach the server while the previous write is under way share one delta frame)
    assert len([d for d in answer_events if d["status"] == "delta"]) >= 1
    done = frames[-1]["data"]
    assert done["answer"] == streamed and done["iterations"] == 2 and done["cancelled"] is False
    assert done["usage"]["total_tokens"] > 0 and done["elapsed"] > 0
    assert sorted(c[1]["order_id"] for c in order_tools) == ["7", "8"]

    persisted = await database_sync_to_async(
        lambda: [(e.seq, e.event, e.data) for e in RunEvent.objects.filter(conversation=conversation)]
    )()
    assert persisted == [(f["seq"], f["event"], f["data"]) for f in frames]
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert run.status == "done" and run.iterations == 2 and run.answer == streamed
    answer = await Message.objects.aget(conversation=conversation, role="assistant")
    assert answer.content == streamed
    await ws.disconnect()


async def test_reconnect_with_resume_mid_run_loses_and_duplicates_nothing(chat, scripted_llm, order_tools):
    scripted_llm.script(
        tool_calls(call("lookup_order", {"order_id": "7"}), latency=0.2),
        tool_calls(call("lookup_order", {"order_id": "8"}), latency=0.2),
        text("Both found.", latency=0.2),
        text("Order 7 shipped, order 8 awaits payment.", chunk_size=4, latency=0.1),
    )
    _, conversation, token = await _setup(chat)
    first, _, _ = await connect(conversation.pk, token)
    await first.send_json_to({"type": "message", "content": "Orders 7 and 8?"})
    seen = await frames_until(first, lambda f: f["seq"] == 3)
    await first.disconnect()  # the run goes on without a socket

    await asyncio.sleep(0.3)  # events keep being persisted while nobody listens
    second, _, _ = await connect(conversation.pk, token)
    await second.send_json_to({"type": "resume", "after_seq": 3})
    rest = await frames_until_done(second)
    await _finish_runs()
    all_seqs = [f["seq"] for f in seen + rest]
    assert all_seqs == list(range(1, len(all_seqs) + 1))
    persisted = await database_sync_to_async(
        lambda: RunEvent.objects.filter(conversation=conversation).count()
    )()
    assert persisted == len(all_seqs)
    await second.disconnect()


async def test_a_message_sent_while_the_agent_works_joins_the_run_as_a_follow_up(
    chat, scripted_llm, order_tools
):
    scripted_llm.script(
        tool_calls(call("lookup_order", {"order_id": "7"}), latency=0.6),
        text("Order 7 shipped; checking 8 as asked.", latency=0.1),
        text("Order 7 shipped.", latency=0.1),
        text("Order 7 has shipped."),
        text("Order 7 has shipped."),
    )
    _, conversation, token = await _setup(chat)
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "message", "content": "Where is order 7?"})
    await frames_until(ws, lambda f: f["data"].get("type") == "thinking")
    await ws.send_json_to({"type": "message", "content": "Also check order 8 please"})
    frames = await frames_until_done(ws)
    await _finish_runs()
    injects = [f["data"] for f in frames if f["event"] == "inject"]
    assert injects == [{"type": "inject", "content": "Also check order 8 please"}]
    assert any(
        "Also check order 8 please" in str(m.get("content"))
        for r in scripted_llm.requests[1:]
        for m in r["messages"]
        if m["role"] == "user"
    )
    assert await Run.objects.unscoped().filter(conversation=conversation).acount() == 1
    injected = await Message.objects.aget(conversation=conversation, injected=True)
    assert injected.content == "Also check order 8 please" and injected.pinned
    await ws.disconnect()


async def test_at_the_users_run_limit_a_new_question_is_refused_but_a_follow_up_still_joins_its_run(
    chat, scripted_llm, order_tools, settings
):
    settings.AGENT_MAX_CONCURRENT_RUNS_PER_USER = 1
    scripted_llm.script(
        tool_calls(call("lookup_order", {"order_id": "7"}), latency=0.6),
        text("Order 7 shipped.", latency=0.1),
        text("Order 7 has shipped."),
        text("Order 7 has shipped."),
    )
    user, conversation, token = await _setup(chat)
    other = await database_sync_to_async(ConversationFactory)(
        organization=conversation.organization, user=user, agent=conversation.agent
    )
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "message", "content": "Where is order 7?"})
    await frames_until(ws, lambda f: f["data"].get("type") == "thinking")

    elsewhere, _, _ = await connect(other.pk, token)
    await elsewhere.send_json_to({"type": "message", "content": "And order 9?"})
    refused = await next_frame(elsewhere)
    await ws.send_json_to({"type": "message", "content": "Also check order 8 please"})
    frames = await frames_until_done(ws)
    await _finish_runs()

    assert refused["event"] == "error" and refused["data"]["code"] == "too_many_runs"
    assert not await Run.objects.unscoped().filter(conversation=other).aexists()
    assert [f["data"]["content"] for f in frames if f["event"] == "inject"] == ["Also check order 8 please"]
    assert await Run.objects.unscoped().filter(conversation=conversation).acount() == 1
    await ws.disconnect()
    await elsewhere.disconnect()


async def test_cancel_stops_a_run_with_a_tool_in_flight(chat, scripted_llm, order_tools):
    scripted_llm.script(tool_calls(call("slow_report", {})))
    _, conversation, token = await _setup(chat)
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "message", "content": "Run the slow report"})
    await frames_until(ws, lambda f: f["data"].get("type") == "iteration" and f["data"]["status"] == "start")
    await ws.send_json_to({"type": "cancel"})
    frames = await frames_until_done(ws)
    await _finish_runs()
    assert frames[-1]["data"]["cancelled"] is True
    run = await Run.objects.unscoped().aget(conversation=conversation)
    assert run.status == "cancelled"
    await ws.disconnect()


async def test_cancel_reaches_a_run_of_this_process_without_looking_it_up_in_the_database(
    chat, scripted_llm, order_tools, monkeypatch
):
    from agents import consumers

    scripted_llm.script(tool_calls(call("slow_report", {})))
    _, conversation, token = await _setup(chat)
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "message", "content": "Run the slow report"})
    await frames_until(ws, lambda f: f["data"].get("type") == "iteration" and f["data"]["status"] == "start")
    lookups: list[object] = []

    def looked_up(**kwargs):  # a busy process answers database calls last: a cancel must not wait for one
        lookups.append(kwargs)
        return None

    monkeypatch.setattr(consumers.selectors, "active_run_for_conversation", looked_up)
    await ws.send_json_to({"type": "cancel"})
    frames = await frames_until_done(ws)
    await _finish_runs()

    assert frames[-1]["data"]["cancelled"] is True and lookups == []
    assert (await Run.objects.unscoped().aget(conversation=conversation)).status == "cancelled"
    await ws.disconnect()


async def test_a_cancel_does_not_wait_behind_the_processs_other_database_work(
    chat, scripted_llm, order_tools
):
    from asgiref.sync import sync_to_async

    scripted_llm.script(tool_calls(call("slow_report", {})))
    _, conversation, token = await _setup(chat)
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "message", "content": "Run the slow report"})
    await frames_until(ws, lambda f: f["data"].get("type") == "iteration" and f["data"]["status"] == "start")
    # the process's shared database thread is busy with someone else's long query
    busy = asyncio.create_task(sync_to_async(time.sleep)(3))
    await asyncio.sleep(0.05)
    await ws.send_json_to({"type": "cancel"})
    frames = await frames_until_done(ws)

    assert frames[-1]["data"]["cancelled"] is True and not busy.done()
    await busy
    await _finish_runs()
    await ws.disconnect()


async def test_bad_frames_get_error_events_and_the_socket_stays_open(chat, scripted_llm, order_tools):
    _, conversation, token = await _setup(chat)
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_to(text_data="not json")
    assert (await next_frame(ws))["data"]["code"] == "bad_frame"
    await ws.send_json_to({"type": "dance"})
    assert (await next_frame(ws))["data"]["code"] == "bad_frame"
    await ws.send_json_to({"type": "message", "content": "x" * 20001})
    error = await next_frame(ws)
    assert error["event"] == "error" and error["seq"] is None and error["data"]["code"] == "message_too_large"
    await ws.send_json_to({"type": "cancel"})
    assert (await next_frame(ws))["data"]["code"] == "no_active_run"
    await ws.send_json_to({"type": "resume", "after_seq": -1})
    assert (await next_frame(ws))["data"]["code"] == "bad_frame"
    assert await Run.objects.unscoped().filter(conversation=conversation).acount() == 0
    await ws.disconnect()


@pytest.mark.cross_org("ws-conversation")
async def test_other_orgs_and_other_users_are_refused_with_4403_and_strangers_with_4401(chat, scripted_llm):
    _, conversation, _ = await _setup(chat)

    def outsiders():
        other = OrganizationFactory(slug="globex")
        return (
            member_of(other, Role.OWNER, username="gus"),
            member_of(conversation.organization, Role.ADMIN, username="colleague"),
        )

    foreign_user, colleague = await database_sync_to_async(outsiders)()
    for user in (foreign_user, colleague):
        _, connected, code = await connect(conversation.pk, await bearer_for(user))
        assert code == 4403
    _, _, code = await connect(conversation.pk, None)
    assert code == 4401
    _, _, code = await connect("not-a-uuid", await bearer_for(foreign_user))
    assert code == 4403


async def test_a_run_is_recorded_finished_before_its_done_event_reaches_the_client(
    chat, scripted_llm, monkeypatch
):
    from asgiref.sync import sync_to_async

    from agents.runs import manager as manager_module

    finish = manager_module.run_finish

    def slow_finish(**kwargs):
        time.sleep(0.3)  # a busy database: recording the run's end takes a while
        return finish(**kwargs)

    def status_now(conversation_id) -> list[str]:  # as another server process would read it
        runs = Run.objects.unscoped().filter(conversation_id=conversation_id).order_by("started_at")
        try:
            return list(runs.values_list("status", flat=True))
        finally:
            connection.close()  # this thread's own connection: give it back before the test ends

    monkeypatch.setattr(manager_module, "run_finish", slow_finish)
    scripted_llm.script(*[text(a) for a in ["Order 7 has shipped."] * 2 + ["Order 8 awaits payment."] * 2])
    _, conversation, token = await _setup(chat)
    ws, _, _ = await connect(conversation.pk, token)
    await ws.send_json_to({"type": "message", "content": "Where is order 7?"})
    first = await frames_until_done(ws)
    seen_at_done = await sync_to_async(status_now, thread_sensitive=False)(conversation.pk)
    # so a question asked at once, through any server, starts a new run instead of joining a finishing one
    await ws.send_json_to({"type": "message", "content": "And order 8?"})
    second = await frames_until_done(ws)
    await _finish_runs()

    assert seen_at_done == ["done"]
    assert first[-1]["data"]["answer"] == "Order 7 has shipped."
    assert second[-1]["data"]["answer"] == "Order 8 awaits payment."
    assert [f for f in second if f["event"] == "inject"] == []
    assert await database_sync_to_async(status_now)(conversation.pk) == ["done", "done"]
    await ws.disconnect()
