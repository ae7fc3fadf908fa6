"""Hooks: priority order, argument rewrites, blocking, failing closed, and how the loop applies them."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from agents.engine import verdicts
from agents.engine.hooks import (
    HookContext,
    HookRegistry,
    PostToolUseHook,
    PreToolUseHook,
    SessionContext,
    SessionStartHook,
)
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import ToolResult
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, text, tool_calls


class Rewrite(PreToolUseHook):
    def __init__(self, name: str, priority: int, suffix: str, seen: list[str]) -> None:
        self.name, self.priority, self.suffix, self.seen = name, priority, suffix, seen

    async def pre_tool_use(self, ctx: HookContext) -> verdicts.PreVerdict:
        self.seen.append(f"{self.name}:{ctx.tool_args['q']}")
        return verdicts.Rewrite({**ctx.tool_args, "q": ctx.tool_args["q"] + self.suffix})


class Block(PreToolUseHook):
    def __init__(self, reason: str = "organisation is in read-only mode", priority: int = 100) -> None:
        self.reason, self.priority, self.calls = reason, priority, 0

    async def pre_tool_use(self, ctx: HookContext) -> verdicts.PreVerdict:
        self.calls += 1
        return verdicts.Block(self.reason)


class Explode(PreToolUseHook):
    name = "approval-gate"

    async def pre_tool_use(self, ctx: HookContext) -> verdicts.PreVerdict:
        raise RuntimeError("feishu is down")


class Audit(PostToolUseHook):
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None, bool]] = []

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> verdicts.PostVerdict:
        self.seen.append((ctx.tool_name, ctx.outcome, ctx.blocked_by, result.is_error))
        return verdicts.ALLOW


def ctx(**args: object) -> HookContext:
    return HookContext(ToolCallContext("search", "call_1", 1, RunContext(org_id=7)), args)


async def test_pre_hooks_run_in_priority_order_lower_first_and_rewritten_args_flow_to_the_next():
    seen: list[str] = []
    registry = HookRegistry([Rewrite("late", 50, "-late", seen), Rewrite("early", 10, "-early", seen)])
    outcome = await registry.run_pre(ctx(q="x"))
    assert seen == ["early:x", "late:x-early"]
    assert outcome.allowed and outcome.args_modified
    assert outcome.args == {"q": "x-early-late"}


async def test_first_block_wins_and_later_hooks_do_not_run():
    first, second = Block("first", priority=1), Block("second", priority=2)
    outcome = await HookRegistry([second, first]).run_pre(ctx(q="x"))
    assert not outcome.allowed
    assert outcome.reason == "first" and outcome.blocked_by == "Block"
    assert (first.calls, second.calls) == (1, 0)


async def test_pre_hook_that_raises_blocks_the_call_fail_closed(caplog):
    with caplog.at_level(logging.WARNING, logger="agents.engine.hooks"):
        outcome = await HookRegistry([Explode()]).run_pre(ctx(q="x"))
    assert not outcome.allowed and outcome.blocked_by == "approval-gate"
    assert "approval-gate" in outcome.reason
    assert "feishu is down" not in caplog.text  # the hook's error text may carry payloads


async def test_post_hook_that_raises_leaves_the_result_unchanged_and_is_logged(caplog):
    class Broken(PostToolUseHook):
        async def post_tool_use(self, ctx, result):
            raise ValueError("boom")

    class Shout(PostToolUseHook):
        priority = 200

        async def post_tool_use(self, ctx, result):
            return verdicts.Rewrite(result.content.upper())

    original = ToolResult(content="rows")
    with caplog.at_level(logging.WARNING):
        result = await HookRegistry([Broken(), Shout()]).run_post(ctx(q="x"), original)
    assert result.content == "ROWS"  # the broken hook changed nothing, the next one still ran
    assert "Broken" in caplog.text


async def test_session_start_hooks_add_text_and_a_failing_one_adds_nothing():
    class Context(SessionStartHook):
        async def session_start(self, ctx: SessionContext) -> str | None:
            return f"Organisation {ctx.metadata['org']} is read-only."

    class Broken(SessionStartHook):
        async def session_start(self, ctx: SessionContext) -> str | None:
            raise RuntimeError

    texts = await HookRegistry([Broken(), Context()]).run_session_start(SessionContext("q", {"org": "acme"}))
    assert texts == ["Organisation acme is read-only."]


def test_registering_something_that_is_not_a_hook_is_refused():
    with pytest.raises(TypeError):
        HookRegistry([object()])  # type: ignore[list-item]


# --- through the loop ---------------------------------------------------------------------------


async def test_blocked_call_never_runs_and_the_model_sees_the_reason(scripted_llm, make_llm):
    tool = RecordingTool("delete_invoice")
    audit = Audit()
    scripted_llm.script(tool_calls(call("delete_invoice", {"q": "42"})), text("I could not delete it."))
    agent = ReActAgent(make_llm(), registry_of(tool), hooks=HookRegistry([Block(), audit]))
    log = EventLog()

    result = await agent.run("delete invoice 42", on_event=log)

    assert tool.calls == []
    tool_message = scripted_llm.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert tool_message["content"] == "Tool call blocked: organisation is in read-only mode"
    assert result.tool_calls[0].outcome == "blocked"
    assert log.steps("iteration", "done")[0]["error"] == "organisation is in read-only mode"
    assert audit.seen == [("delete_invoice", "blocked", "Block", True)]  # audit learns of blocked calls


async def test_hook_that_raises_blocks_the_call_and_the_tool_never_runs(scripted_llm, make_llm):
    tool = RecordingTool("pay")
    scripted_llm.script(tool_calls(call("pay", {"q": "100"})), text("Payment not made."))
    agent = ReActAgent(make_llm(), registry_of(tool), hooks=HookRegistry([Explode()]))
    result = await agent.run("pay 100")
    assert tool.calls == []
    assert result.tool_calls[0].outcome == "blocked"
    assert result.answer == "Payment not made."


async def test_rewritten_args_reach_the_tool_and_post_hook_rewrites_the_observation(scripted_llm, make_llm):
    class Truncate(PostToolUseHook):
        async def post_tool_use(self, ctx, result):
            return verdicts.Rewrite(result.content[:12])

    seen: list[str] = []
    tool = RecordingTool("search")
    hooks = HookRegistry([Rewrite("scope", 1, " org:7", seen), Truncate()])
    scripted_llm.script(tool_calls(call("search", {"q": "invoices"})), text("ok"))
    await ReActAgent(make_llm(), registry_of(tool), hooks=hooks).run("find invoices")
    assert tool.calls == [{"q": "invoices org:7"}]
    assert scripted_llm.requests[1]["messages"][-1]["content"] == 'search: {"q"'


async def test_post_hooks_see_the_args_outcome_and_run_metadata(scripted_llm, make_llm):
    contexts: list[HookContext] = []

    class Spy(PostToolUseHook):
        async def post_tool_use(self, ctx, result):
            contexts.append(ctx)
            return verdicts.ALLOW

    scripted_llm.script(tool_calls(call("search", {"q": "a"}), call("nope", {})), text("ok"))
    agent = ReActAgent(make_llm(), registry_of(RecordingTool("search")), hooks=HookRegistry([Spy()]))
    await agent.run("q", metadata={"org_id": 7, "run_id": "r1"})
    assert [(c.tool_name, c.outcome) for c in contexts] == [("search", "ok"), ("nope", "unknown_tool")]
    assert contexts[0].run == RunContext(org_id=7, run_id="r1")
    assert contexts[0].iteration == 1


async def test_a_slow_pre_hook_is_not_cut_by_the_tool_timeout(scripted_llm, make_llm):
    """An approval gate may wait far longer than a tool may run."""
    entered, released = asyncio.Event(), asyncio.Event()

    class Approval(PreToolUseHook):
        async def pre_tool_use(self, ctx):
            entered.set()
            await released.wait()
            return verdicts.ALLOW

    tool = RecordingTool("pay")
    scripted_llm.script(tool_calls(call("pay", {"q": "1"})), text("paid"))
    agent = ReActAgent(
        make_llm(), registry_of(tool), hooks=HookRegistry([Approval()]), tool_timeout=0.05, batch_timeout=0.05
    )
    log = EventLog()
    run = asyncio.create_task(agent.run("pay", on_event=log))
    try:
        await entered.wait()
        assert log.steps("iteration", "start")  # the UI already shows the pending call
        await asyncio.sleep(0.1)  # the approver takes longer than both timeouts
        released.set()
        result = await run
    finally:
        released.set()
        if not run.done():
            run.cancel()
    assert tool.calls == [{"q": "1"}]
    assert result.tool_calls[0].outcome == "ok"


async def test_session_start_hook_text_reaches_the_system_prompt(scripted_llm, make_llm):
    class Context(SessionStartHook):
        async def session_start(self, ctx):
            return "The organisation is in read-only mode."

    scripted_llm.script(text("ok"))
    await ReActAgent(
        make_llm(), registry_of(), system_prompt="You are Acme's agent.", hooks=HookRegistry([Context()])
    ).run("hi")
    system = scripted_llm.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are Acme's agent.\n\nThe organisation is in read-only mode.")


def test_hook_contexts_are_immutable_values():
    context = ctx(q="x")
    with pytest.raises(AttributeError):
        context.tool_args = {}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        context.call.tool_name = "other"  # type: ignore[misc]
    assert json.dumps(dict(context.tool_args)) == '{"q": "x"}'
