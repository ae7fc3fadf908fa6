"""Each tool call's identity is handed to its hooks and its tool as an argument: calls running at once each
see their own, and nothing of one call reaches another."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agents.engine.hooks import (
    ALLOW,
    Allow,
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
        self.versions: dict[str, int | None] = {}

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
        self.versions[ctx.tool_call_id] = ctx.config_version
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


class Pins(PreToolUseHook):
    """Pins a configuration version per tool call id (calls not named: pins nothing)."""

    def __init__(self, versions: dict[str, int], *, name: str = "pins", priority: int = 100) -> None:
        self.versions = versions
        self.name = name
        self.priority = priority

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        assert ctx.call.config_version is None  # the pre-hooks judge; the version comes with their verdict
        version = self.versions.get(ctx.tool_call_id)
        return ALLOW if version is None else Allow(config_version=version)


async def test_the_configuration_version_a_pre_hook_pinned_is_the_one_the_tool_and_the_post_hooks_get(
    scripted_llm, make_llm
):
    # given a guard rail that judges two concurrent calls under two versions of the configuration
    tool = Overlapping(together=2)
    witness = Witness()
    hooks = HookRegistry([Pins({"a": 41, "b": 42}), witness])
    scripted_llm.script(tool_calls(call("search", {"q": "x"}, id="a"), call("search", {"q": "y"}, id="b")))
    scripted_llm.script(text("done"))

    # when the run makes them
    await ReActAgent(make_llm(), registry_of(tool), hooks=hooks).run("go", metadata=RUN)

    # then each call's tool and post-hooks got the version its own judgement pinned
    assert {call_id: ctx.config_version for call_id, ctx in witness.post.items()} == {"a": 41, "b": 42}
    assert tool.versions == {"a": 41, "b": 42}


async def test_the_last_pre_hook_that_pins_a_version_wins(scripted_llm, make_llm):
    tool = RecordingTool("search")
    hooks = HookRegistry(
        [Pins({"c1": 1}, name="first", priority=10), Pins({"c1": 2}, name="last", priority=20)]
    )
    scripted_llm.script(tool_calls(call("search", {"q": "x"}, id="c1")), text("done"))

    await ReActAgent(make_llm(), registry_of(tool), hooks=hooks).run("go", metadata=RUN)

    assert [ctx.config_version for ctx in tool.contexts] == [2]


async def test_nothing_of_one_call_reaches_the_next_with_the_same_id(scripted_llm, make_llm):
    # given a run whose model reuses the id c1 in its next turn, and a guard rail that pins a version
    # only for the first call it sees
    class PinsOnce(PreToolUseHook):
        def __init__(self) -> None:
            self.pinned = False

        async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
            if self.pinned:
                return ALLOW
            self.pinned = True
            return Allow(config_version=7)

    tool = RecordingTool("search")
    scripted_llm.script(
        tool_calls(call("search", {"q": "x"}, id="c1")), tool_calls(call("search", {"q": "y"}, id="c1"))
    )
    scripted_llm.script(text("done"))

    # when both calls run
    await ReActAgent(
        make_llm(), registry_of(tool), hooks=HookRegistry([PinsOnce()]), completion_check=False
    ).run("go", metadata=RUN)

    # then the second call was judged afresh and carries nothing of the first
    first, second = tool.contexts
    assert (first.tool_call_id, first.iteration, first.config_version) == ("c1", 1, 7)
    assert (second.tool_call_id, second.iteration, second.config_version) == ("c1", 2, None)
