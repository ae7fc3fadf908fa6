"""Each tool call's identity is handed to its hooks and its tool as an argument: calls running at once each
see their own, and nothing of one call reaches another."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.engine.hooks import (
    ALLOW,
    HookContext,
    HookRegistry,
    PostToolUseHook,
    PostVerdict,
    PreToolUseHook,
    PreVerdict,
)
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Tool, ToolResult
from tests.engine.doubles import RecordingTool, registry_of
from tests.engine.test_checkpoint_resume import MemoryLedger
from tests.fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.timeout(30)

RUN = RunContext(org_id=7, user_id=3, agent_id="agent-1", run_id="run-1")


class Witness(PreToolUseHook, PostToolUseHook):
    """Notes the call context each hook point is handed, by tool call id."""

    name = "witness"

    def __init__(self) -> None:
        self.pre: dict[str, ToolCallContext] = {}
        self.post: dict[str, ToolCallContext] = {}

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        self.pre[ctx.tool_call_id] = ctx.call
        return ALLOW

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> PostVerdict:
        self.post[ctx.tool_call_id] = ctx.call
        return ALLOW


class Overlapping(RecordingTool):
    """Notes its context before and after waiting until ``together`` calls are in flight at once."""

    def __init__(self, together: int) -> None:
        super().__init__("search")
        self.together = together
        self.seen: list[tuple[str, str, str | None]] = []

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> ToolResult | str:
        self.seen.append(("before", ctx.tool_call_id, ctx.idempotency_key))
        self.running += 1
        self._changed.set()
        try:
            await self.until_running(self.together)
            await asyncio.sleep(0)  # the other call runs in between
        finally:
            self.running -= 1
        self.seen.append(("after", ctx.tool_call_id, ctx.idempotency_key))
        return f"{ctx.tool_call_id}: {kwargs['q']}"


async def test_two_calls_running_at_once_each_see_their_own_id_and_idempotency_key(scripted_llm, make_llm):
    # given two calls of one reply, running concurrently in a durable run
    tool = Overlapping(together=2)
    witness = Witness()
    scripted_llm.script(tool_calls(call("search", {"q": "x"}, id="a"), call("search", {"q": "y"}, id="b")))
    scripted_llm.script(text("done"))

    # when the run makes them
    result = await ReActAgent(
        make_llm(), registry_of(tool), hooks=HookRegistry([witness]), ledger=MemoryLedger()
    ).run("go", metadata=RUN)

    # then each, before and after the other ran, saw only its own identity
    assert sorted(tool.seen) == [
        ("after", "a", "run-1:a"),
        ("after", "b", "run-1:b"),
        ("before", "a", "run-1:a"),
        ("before", "b", "run-1:b"),
    ]
    assert [r.observation for r in result.tool_calls] == ["a: x", "b: y"]
    # and each call's hooks were handed that same call's context, with the run's caller identity
    for call_id in ("a", "b"):
        pre, post = witness.pre[call_id], witness.post[call_id]
        assert pre == post
        assert (pre.tool_name, pre.tool_call_id, pre.idempotency_key) == (
            "search",
            call_id,
            f"run-1:{call_id}",
        )
        assert (pre.org_id, pre.user_id, pre.run_id, pre.iteration) == (7, 3, "run-1", 1)


async def test_the_tool_is_handed_the_context_its_hooks_saw(scripted_llm, make_llm):
    tool = RecordingTool("search")
    witness = Witness()
    scripted_llm.script(tool_calls(call("search", {"q": "x"}, id="c1")), text("done"))

    await ReActAgent(make_llm(), registry_of(tool), hooks=HookRegistry([witness])).run("go", metadata=RUN)

    [handed] = tool.contexts
    assert handed == witness.pre["c1"] == witness.post["c1"]


async def test_a_call_outside_a_run_has_no_idempotency_key(scripted_llm, make_llm):
    tool = RecordingTool("search")
    scripted_llm.script(tool_calls(call("search", {"q": "x"}, id="c1")), text("done"))

    await ReActAgent(make_llm(), registry_of(tool)).run("go")

    [handed] = tool.contexts
    assert (handed.tool_call_id, handed.idempotency_key, handed.run_id) == ("c1", None, "")


async def test_the_plan_step_making_a_call_is_on_its_context(scripted_llm, make_llm):
    tool = RecordingTool("search")
    scripted_llm.script(tool_calls(call("search", {"q": "x"}, id="c1")), text("done"))
    step = RunContext(org_id=7, run_id="run-1", plan_step_id="2", plan_round=1)

    await ReActAgent(make_llm(), registry_of(tool)).run("go", metadata=step)

    [handed] = tool.contexts
    assert (handed.plan_step_id, handed.run.plan_round) == ("2", 1)


class TakesAnArgumentNamedCtx(Tool):
    name = "echo"
    description = "Echo."
    parameters = {"type": "object", "properties": {"ctx": {"type": "string"}}, "required": ["ctx"]}

    async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> str:
        return f"{ctx.tool_call_id} {kwargs['ctx']}"


async def test_a_tool_argument_may_share_the_context_parameters_name(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(call("echo", {"ctx": "hello"}, id="c1")), text("done"))

    result = await ReActAgent(make_llm(), registry_of(TakesAnArgumentNamedCtx())).run("go")

    assert result.tool_calls[0].observation == "c1 hello"
