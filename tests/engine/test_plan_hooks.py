"""Guard rails inside plan steps: every step tool call passes the same hooks, exactly as in ReAct mode."""

from __future__ import annotations

from agents.engine.hooks import (
    ALLOW,
    Block,
    HookContext,
    HookRegistry,
    PostToolUseHook,
    PostVerdict,
    PreToolUseHook,
    PreVerdict,
)
from agents.engine.model_registry import ModelRegistry
from agents.engine.plan.agent import PlanAgent
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.tools import ToolResult
from tests.engine import test_plan_support as support
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.engine.test_plan_support import STEP, plan_reply, step, verdict
from tests.fakes.openai_server import call, text, tool_calls

registry = support.registry  # fixtures
script = support.script

READ_ONLY = "the organisation is in read-only mode"


class ReadOnly(PreToolUseHook):
    """Blocks every write action, like the platform's read-only guard rail; records what it saw."""

    name = "read_only"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, RunContext]] = []

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        self.seen.append((ctx.tool_name, ctx.tool_call_id, ctx.run))
        if ctx.tool_name.startswith("create_"):
            return Block(READ_ONLY)
        return ALLOW


class Audit(PostToolUseHook):
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str | None, str | None]] = []

    async def post_tool_use(self, ctx: HookContext, result: ToolResult) -> PostVerdict:
        self.rows.append((ctx.tool_name, ctx.outcome, ctx.blocked_by, ctx.run.plan_step_id))
        return ALLOW


def write_tool() -> RecordingTool:
    return RecordingTool("create_order", description="Create a sales order.")


async def test_a_hook_blocks_a_write_inside_a_step_exactly_as_in_react_mode(make_llm, registry, script):
    replies = (tool_calls(call("create_order", {"q": "10 chairs"})), text("I could not create the order."))

    # ReAct mode: the reference behaviour.
    react_tool = write_tool()
    script.step("react", *replies)  # the same step prompt marker, so the script answers it
    react_log = EventLog()
    await ReActAgent(make_llm(), registry_of(react_tool), hooks=HookRegistry([ReadOnly()])).run(
        "Your step (react): order 10 chairs", on_event=react_log
    )
    (react_done,) = react_log.steps("iteration", "done")

    # Plan mode: the same call inside a step.
    plan_tool = write_tool()
    read_only, audit = ReadOnly(), Audit()
    script.planner(plan_reply(step("1", "order 10 chairs"), step("2", "confirm", ["1"])))
    script.step("1", *replies).step("2", text("nothing to confirm"))
    script.analyzer(verdict(False, 0.9, "blocked", "The order was not created: read-only mode."))
    log = EventLog()
    plan_agent = PlanAgent(registry, registry_of(plan_tool), hooks=HookRegistry([read_only, audit]))

    result = await plan_agent.run("Order 10 chairs", on_event=log, metadata={"org_id": 7})

    (plan_done,) = [e for e in log.of("plan") if e["type"] == "step_iteration" and e["status"] == "done"]
    for key in ("tool_name", "observation", "error", "outcome", "tool_args"):
        assert plan_done[key] == react_done[key], key
    assert plan_done["outcome"] == "blocked"
    assert plan_done["observation"] == f"Tool call blocked: {READ_ONLY}"
    assert react_tool.calls == [] and plan_tool.calls == []  # the write never ran in either mode
    second_request = script.of(STEP, "1")[1].body["messages"]
    assert second_request[-1] == {
        "role": "tool",
        "tool_call_id": plan_done["tool_call_id"],
        "content": f"Tool call blocked: {READ_ONLY}",
    }
    assert audit.rows == [("create_order", "blocked", "read_only", "1")]
    assert result.plans[0].step("1").tool_calls[0].outcome == "blocked"


async def test_hooks_see_the_runs_metadata_with_the_step_id_and_round(registry, script):
    read_only = ReadOnly()
    script.planner(plan_reply(step("a", "look up", tool_hint="search"), step("b", "look up more")))
    script.step("a", tool_calls(call("search", {"q": "a"})), text("a done"))
    script.step("b", tool_calls(call("search", {"q": "b"})), text("b done"))
    script.analyzer(verdict(True, 1.0, "", "ok"))
    plan_agent = PlanAgent(registry, registry_of(RecordingTool()), hooks=HookRegistry([read_only]))

    await plan_agent.run("goal", metadata={"org_id": 7, "run_id": "run-1"})

    seen = sorted((run for _name, _id, run in read_only.seen), key=lambda run: run.plan_step_id or "")
    assert seen == [
        RunContext(org_id=7, run_id="run-1", plan_step_id="a", plan_round=1),
        RunContext(org_id=7, run_id="run-1", plan_step_id="b", plan_round=1),
    ]


async def test_parallel_json_mode_steps_never_share_a_tool_call_id(make_llm, script):
    json_model = make_llm(model="json-model", tool_call=False)
    registry = ModelRegistry({"general": json_model})
    read_only = ReadOnly()
    action = '{"reasoning": "look", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "x"}}}'
    final = '{"reasoning": "done", "action": {"type": "final_answer", "answer": "found"}}'
    script.planner(text('{"steps": [{"id": "1", "task": "a"}, {"id": "2", "task": "b"}]}'))
    script.step("1", text(action), text(final)).step("2", text(action), text(final))
    script.analyzer(text('{"achieved": true, "confidence": 1, "reasoning": "", "final_answer": "ok"}'))
    plan_agent = PlanAgent(registry, registry_of(RecordingTool()), hooks=HookRegistry([read_only]))

    result = await plan_agent.run("goal")

    assert [s.status for s in result.plans[0].steps] == ["done", "done"]
    assert sorted(call_id for _name, call_id, _m in read_only.seen) == [
        "r1.1.json_call_1",
        "r1.2.json_call_1",
    ]
