"""Typed outcomes: hook verdicts, parking as a verdict in both loop modes, and the stop reasons on the wire."""

from __future__ import annotations

import json

from agents.engine.durable.checkpoint import STAGE_TOOLS
from agents.engine.hooks import (
    ALLOW,
    Block,
    HookContext,
    HookRegistry,
    Park,
    PreToolUseHook,
    PreVerdict,
    Rewrite,
)
from agents.engine.react import ReActAgent
from agents.engine.stop_reasons import StopReason
from agents.engine.tool_context import ToolCallContext
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.engine.test_checkpoint_resume import RUN, Checkpoints
from tests.engine.test_react_json import act
from tests.fakes.openai_server import call, text, tool_calls


class Verdict(PreToolUseHook):
    """Answers every call with the same verdict (or anything else a careless hook may return)."""

    def __init__(self, verdict: object, *, name: str = "verdict", priority: int = 100) -> None:
        self.verdict, self.name, self.priority = verdict, name, priority
        self.seen: list[str] = []

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        self.seen.append(ctx.tool_call_id)
        return self.verdict  # type: ignore[return-value]


def ctx(**args: object) -> HookContext:
    return HookContext(ToolCallContext("search", "c1", 1), args)


async def test_a_hook_that_returns_no_verdict_blocks_the_call_naming_itself(scripted_llm, make_llm):
    tool = RecordingTool("search")
    hooks = HookRegistry([Verdict(None, name="careless")])
    scripted_llm.script(tool_calls(call("search", {"q": "x"})), text("could not search"))
    result = await ReActAgent(make_llm(), registry_of(tool), hooks=hooks).run("find x")
    assert tool.calls == []
    (record,) = result.tool_calls
    assert record.outcome == "blocked"
    assert (
        record.observation == "Tool call blocked: the guard rail 'careless' failed, so the call was not made"
    )


async def test_a_block_after_a_rewrite_keeps_the_rewritten_args_and_names_the_blocking_hook():
    hooks = HookRegistry(
        [Verdict(Rewrite({"q": "scoped"}), name="scope", priority=1), Verdict(Block("no"), name="gate")]
    )
    outcome = await hooks.run_pre(ctx(q="x"))
    assert outcome.verdict == Block("no", "gate")
    assert outcome.args == {"q": "scoped"} and not outcome.allowed and outcome.blocked_by == "gate"


async def test_allow_from_every_hook_leaves_the_args_unchanged():
    outcome = await HookRegistry([Verdict(ALLOW), Verdict(ALLOW, priority=5)]).run_pre(ctx(q="x"))
    assert outcome.verdict == ALLOW and outcome.args == {"q": "x"} and not outcome.args_modified


async def test_a_park_stops_the_hooks_after_it_and_no_call_of_the_batch_runs(scripted_llm, make_llm):
    park = Park("approval", {"approval_id": "ap-9"})
    parker, later = Verdict(park, name="gate", priority=1), Verdict(ALLOW, name="later", priority=2)
    tool = RecordingTool("search")
    scripted_llm.script(tool_calls(call("search", {"q": "a"}, id="a"), call("search", {"q": "b"}, id="b")))
    events = EventLog()
    checkpoints = Checkpoints()
    agent = ReActAgent(make_llm(), registry_of(tool), hooks=HookRegistry([parker, later]))
    result = await agent.run("find a and b", on_event=events, checkpoint=checkpoints, metadata=RUN)

    assert result.stop_reason is StopReason.PARKED and result.park == park
    assert tool.calls == [] and parker.seen == ["a"] and later.seen == []
    assert "done" not in events.channels()
    last = checkpoints.items[-1]["state"]
    assert last["stage"] == STAGE_TOOLS and [c["id"] for c in last["pending"]] == ["a", "b"]


async def test_a_park_in_json_mode_parks_the_run_with_its_call_pending(scripted_llm, make_llm):
    tool = RecordingTool("search")
    scripted_llm.script(text(act("search", {"q": "x"})))
    checkpoints = Checkpoints()
    hooks = HookRegistry([Verdict(Park("approval", {"approval_id": "ap-1"}))])
    agent = ReActAgent(make_llm(tool_call=False), registry_of(tool), hooks=hooks)
    result = await agent.run("find x", checkpoint=checkpoints, metadata=RUN)

    assert result.stop_reason == "parked" and result.park is not None
    assert result.park.as_dict() == {"reason": "approval", "approval_id": "ap-1"}
    assert tool.calls == [] and result.answer == ""
    last = checkpoints.items[-1]["state"]
    assert last["stage"] == STAGE_TOOLS and [c["id"] for c in last["pending"]] == ["json_call_1"]


async def test_the_done_event_carries_the_stop_reason_as_a_plain_string(scripted_llm, make_llm):
    scripted_llm.script(text("hello"), text("hello"))
    agent = ReActAgent(make_llm(), registry_of())
    events = EventLog()
    result = await agent.run("hi", on_event=events)
    await agent.stream_answer(result, on_event=events)
    (done,) = events.of("done")
    assert type(done["stop_reason"]) is str and done["stop_reason"] == "final_answer"
    assert json.loads(json.dumps(done))["stop_reason"] == "final_answer"
