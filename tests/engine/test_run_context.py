"""The run context: what the engine's run metadata becomes for hooks, and back."""

from __future__ import annotations

import dataclasses

import pytest

from agents.engine.hooks import ALLOW, HookContext, HookRegistry, PreToolUseHook, PreVerdict
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from tests.engine.doubles import RecordingTool, registry_of
from tests.fakes.openai_server import call, text, tool_calls

WHO = {
    "org_id": 7,
    "org_slug": "acme",
    "user_id": 3,
    "username": "lin",
    "agent_id": "a-1",
    "agent_name": "Purchasing",
    "conversation_id": "c-1",
    "run_id": "r-1",
}


def test_metadata_becomes_a_context_with_unknown_keys_kept_apart():
    run = RunContext.of({**WHO, "test_run": "t-9", "plan_step_id": 2, "plan_round": 1})

    assert (run.org_id, run.org_slug, run.user_id, run.username) == (7, "acme", 3, "lin")
    assert (run.agent_id, run.agent_name, run.conversation_id, run.run_id) == (
        "a-1",
        "Purchasing",
        "c-1",
        "r-1",
    )
    assert (run.plan_step_id, run.plan_round) == ("2", 1)  # step ids are text, as plans name them
    assert run.extra == {"test_run": "t-9"}


def test_a_context_read_back_from_its_metadata_is_the_same_context():
    run = RunContext.of(WHO).with_hold(0.5)

    assert run.as_metadata() == {**WHO, "approval_hold_seconds": 0.5}
    assert RunContext.of(run.as_metadata()) == run
    assert RunContext.of(run) is run


def test_no_metadata_is_the_empty_context_and_a_context_cannot_change():
    run = RunContext.of(None)

    assert run == RunContext() and run.org_id is None and run.run_id == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.run_id = "r-2"  # type: ignore[misc]


async def test_every_hook_sees_the_run_context_of_the_metadata_the_run_was_given(scripted_llm, make_llm):
    seen: list[RunContext] = []

    class Spy(PreToolUseHook):
        async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
            seen.append(ctx.run)
            return ALLOW

    scripted_llm.script(tool_calls(call("search", {"q": "a"})), text("done"))
    agent = ReActAgent(make_llm(), registry_of(RecordingTool("search")), hooks=HookRegistry([Spy()]))

    await agent.run("q", metadata={**WHO, "approval_hold_seconds": 0})

    assert seen == [RunContext.of(WHO).with_hold(0)]
