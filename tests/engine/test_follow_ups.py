"""Follow-ups: the queue, when each mode drains it, merging, pinning and answer suppression."""

from __future__ import annotations

import json

from agents.engine.events import Event
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.react import ReActAgent
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, text, tool_calls


def final(answer: str) -> str:
    return json.dumps({"reasoning": "done", "action": {"type": "final_answer", "answer": answer}})


def use_tool(name: str, args: dict) -> str:
    return json.dumps(
        {"reasoning": "look it up", "action": {"type": "tool_call", "tool_name": name, "tool_args": args}}
    )


class FollowUpOnThinking(EventLog):
    """Queues user messages when the given iteration starts thinking (i.e. while the LLM call runs)."""

    def __init__(self, queue: FollowUpQueue, at_iteration: int, *messages: str) -> None:
        super().__init__()
        self.queue, self.at_iteration, self.messages = queue, at_iteration, messages

    async def __call__(self, event: Event) -> None:
        await super().__call__(event)
        data = event.data
        if (
            data.get("type") == "thinking"
            and data.get("status") == "start"
            and data["iteration"] == self.at_iteration
        ):
            for message in self.messages:
                self.queue.put(message)


def test_queue_drains_everything_oldest_first_and_ignores_blank_messages():
    queue = FollowUpQueue()
    queue.put("first")
    queue.put("   ")
    queue.put("second")
    assert queue.pending == 2
    assert queue.drain() == ["first", "second"]
    assert queue.drain() == []


async def test_json_mode_drains_right_after_the_assistant_message_and_suppresses_the_final_answer(
    scripted_llm, make_llm
):
    queue = FollowUpQueue()
    scripted_llm.script(text(final("Paris")), text(final("Paris, and Berlin")))
    agent = ReActAgent(make_llm(tool_call=False), registry_of(), follow_ups=queue)
    log = FollowUpOnThinking(queue, 1, "also the capital of Germany")

    result = await agent.run("capital of France?", on_event=log)

    assert result.answer == "Paris, and Berlin"
    assert result.iterations == 2
    second = scripted_llm.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": final("Paris")}
    assert second[-1]["role"] == "user"
    assert second[-1]["content"].startswith("[USER INTERRUPT]")
    assert "also the capital of Germany" in second[-1]["content"]
    assert log.of("inject") == [{"type": "inject", "content": "also the capital of Germany"}]


async def test_json_mode_takes_the_follow_up_before_the_tool_observation(scripted_llm, make_llm):
    queue = FollowUpQueue()
    scripted_llm.script(text(use_tool("search", {"q": "x"})), text(final("done")))
    agent = ReActAgent(make_llm(tool_call=False), registry_of(RecordingTool()), follow_ups=queue)

    result = await agent.run("find x", on_event=FollowUpOnThinking(queue, 1, "only 2024"))

    roles = [(m["role"], m["content"][:18]) for m in result.messages[2:5]]
    assert roles == [
        ("assistant", use_tool("search", {"q": "x"})[:18]),
        ("user", "[USER INTERRUPT] T"),
        ("user", "Observation from `"),
    ]


async def test_native_mode_drains_only_after_all_tool_results_are_appended(scripted_llm, make_llm):
    queue = FollowUpQueue()
    scripted_llm.script(
        tool_calls(call("search", {"q": "a"}, id="c1"), call("search", {"q": "b"}, id="c2")),
        text("done"),
    )
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), follow_ups=queue)

    await agent.run("find a and b", on_event=FollowUpOnThinking(queue, 1, "hurry"))

    sent = scripted_llm.requests[1]["messages"]
    assert [m["role"] for m in sent[-4:]] == ["assistant", "tool", "tool", "user"]
    assert [m["tool_call_id"] for m in sent[-3:-1]] == ["c1", "c2"]
    assert sent[-1]["content"].startswith("[USER INTERRUPT]")


async def test_native_mode_suppresses_a_pending_final_answer_when_a_follow_up_arrived(scripted_llm, make_llm):
    queue = FollowUpQueue()
    scripted_llm.script(text("Paris"), text("Paris; Berlin for Germany"))
    agent = ReActAgent(make_llm(), registry_of(), follow_ups=queue)
    log = FollowUpOnThinking(queue, 1, "and Germany?")

    result = await agent.run("capital of France?", on_event=log)

    assert result.answer == "Paris; Berlin for Germany"
    assert len(log.steps("answer", "start")) == 1  # the suppressed answer was never signalled
    sent = scripted_llm.requests[1]["messages"]
    assert [m["role"] for m in sent[-2:]] == ["assistant", "user"]


async def test_several_follow_ups_drained_at_once_become_one_pinned_message_with_an_inject_event_each(
    scripted_llm, make_llm
):
    queue = FollowUpQueue()
    scripted_llm.script(text("A"), text("B"))
    agent = ReActAgent(make_llm(), registry_of(), follow_ups=queue)
    log = FollowUpOnThinking(queue, 1, "first follow-up", "second follow-up")

    result = await agent.run("q", on_event=log)

    pinned = [m for m in result.messages if m["content"].startswith("[USER INTERRUPT]")]
    assert len(pinned) == 1
    assert pinned[0]["_pinned"] is True
    assert "1. first follow-up" in pinned[0]["content"]
    assert "2. second follow-up" in pinned[0]["content"]
    assert [e["content"] for e in log.of("inject")] == ["first follow-up", "second follow-up"]
    assert "_pinned" not in json.dumps(scripted_llm.requests[1])  # metadata never leaves the process


async def test_follow_ups_do_not_count_as_tool_calls_for_self_reflection(scripted_llm, make_llm):
    queue = FollowUpQueue()
    scripted_llm.script(text("A"), text("B"))
    agent = ReActAgent(make_llm(), registry_of(), follow_ups=queue, self_reflection_interval=1)
    result = await agent.run("q", on_event=FollowUpOnThinking(queue, 1, "more"))
    assert not any("[Self-reflection]" in m["content"] for m in result.messages)
