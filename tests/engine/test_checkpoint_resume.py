"""Durable runs, engine side: checkpoints after every iteration, folding them, resume, parking, the ledger."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from agents.engine.durable.checkpoint import (
    STAGE_ANSWER,
    STAGE_MODEL,
    STAGE_TOOLS,
    Checkpoint,
    checkpoints_fold,
)
from agents.engine.durable.ledger import UNKNOWN_OUTCOME, RecordedCall, idempotency_key
from agents.engine.follow_ups import FollowUpQueue
from agents.engine.hooks import ALLOW, HookContext, HookRegistry, Park, PreToolUseHook, PreVerdict
from agents.engine.react import ReActAgent
from agents.engine.tool_context import ToolCallContext
from agents.engine.tools import Tool, ToolResult
from tests.engine.doubles import EventLog, RecordingTool, registry_of
from tests.fakes.openai_server import call, hang, text, tool_calls

RUN = {"run_id": "run-1"}


class Checkpoints:
    """A ``checkpoint`` callback keeping what a database would: JSON copies, in order."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._changed = asyncio.Event()

    async def __call__(self, checkpoint: Checkpoint) -> None:
        self.items.append(json.loads(json.dumps(checkpoint.as_dict())))
        self._changed.set()

    async def reached(self, *, iteration: int, stage: str) -> None:
        """Wait for a checkpoint at ``iteration`` and ``stage``."""
        while not any(
            c["state"]["iteration"] == iteration and c["state"]["stage"] == stage for c in self.items
        ):
            self._changed.clear()
            await self._changed.wait()

    def folded(self, upto: int | None = None) -> dict[str, Any]:
        """The run's checkpoint that its first ``upto`` checkpoints add up to."""
        folded = checkpoints_fold(copy.deepcopy(self.items[:upto]))
        assert folded is not None
        return folded

    def last_where(self, stage: str) -> int:
        """How many checkpoints there are up to and including the last one at ``stage``."""
        return max(i for i, c in enumerate(self.items) if c["state"]["stage"] == stage) + 1


class MemoryLedger:
    """An in-memory tool call ledger (the platform's is a database table)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.finished = asyncio.Event()

    async def recorded(self, keys: Sequence[str], *, iteration: int) -> Mapping[str, RecordedCall]:
        found = {}
        for key in keys:
            row = self.rows.get(key)
            if row is not None and row["iteration"] == iteration:
                found[key] = RecordedCall(
                    finished=row["finished"],
                    observation=row.get("observation", ""),
                    error=row.get("error"),
                    outcome=row.get("outcome", "ok"),
                )
        return found

    async def begin(self, key: str, *, tool_name: str, args: Mapping[str, Any], iteration: int) -> None:
        self.rows[key] = {"iteration": iteration, "finished": False, "tool": tool_name}

    async def finish(self, key: str, *, observation: str, error: str | None, outcome: str) -> None:
        self.rows[key].update(finished=True, observation=observation, error=error, outcome=outcome)
        self.finished.set()


def _search(q: str, id: str) -> Any:
    return call("search", {"q": q}, id=id)


async def test_checkpoints_fold_into_the_runs_whole_state(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(_search("a", "c1")), tool_calls(_search("b", "c2")), text("Both found."))
    checkpoints = Checkpoints()
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), completion_check=False)
    result = await agent.run("find a and b", checkpoint=checkpoints, metadata=RUN)

    checkpoint = checkpoints.folded()
    assert checkpoint["messages"] == json.loads(json.dumps(result.messages))
    assert [r["id"] for r in checkpoint["records"]] == ["c1", "c2"]
    assert checkpoint["iteration"] == result.iterations == 3
    assert checkpoint["usage"] == result.usage.as_dict()
    assert checkpoint["stage"] == STAGE_ANSWER and checkpoint["final"] == ["Both found.", "final_answer"]
    assert [c["seq"] for c in checkpoints.items] == list(range(1, len(checkpoints.items) + 1))


async def test_checkpoints_after_the_first_carry_only_what_was_appended(scripted_llm, make_llm):
    scripted_llm.script(*(tool_calls(_search(str(n), f"c{n}")) for n in range(6)), text("done"))
    checkpoints = Checkpoints()
    agent = ReActAgent(make_llm(), registry_of(RecordingTool()), completion_check=False)
    await agent.run("search six times", checkpoint=checkpoints)

    first, *rest = checkpoints.items
    assert first["reset"] and first["messages"][0]["role"] == "system"
    assert not any(c["reset"] for c in rest)
    assert max(len(c["messages"]) for c in rest) <= 3  # never the whole history again
    assert max(len(c["records"]) for c in rest) == 1


async def test_a_turns_tool_calls_are_checkpointed_as_pending_before_they_run(scripted_llm, make_llm):
    seen: list[dict[str, Any]] = []
    checkpoints = Checkpoints()

    class Probe(RecordingTool):
        async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> Any:
            seen.append(checkpoints.items[-1]["state"])
            return await super().execute(ctx, **kwargs)

    scripted_llm.script(tool_calls(_search("a", "c1"), _search("b", "c2")), text("ok"))
    agent = ReActAgent(make_llm(), registry_of(Probe()), completion_check=False)
    await agent.run("two searches", checkpoint=checkpoints)

    assert seen[0]["stage"] == STAGE_TOOLS
    assert [c["id"] for c in seen[0]["pending"]] == ["c1", "c2"]
    after_tools = checkpoints.items[checkpoints.last_where(STAGE_MODEL) - 1]["state"]
    assert after_tools["pending"] is None


async def test_a_run_resumed_from_its_checkpoint_after_a_crash_finishes_the_same_way(scripted_llm, make_llm):
    # given a run whose process "dies" while the model is thinking after its first tool call
    scripted_llm.script(tool_calls(_search("a", "c1")), hang(30))
    checkpoints = Checkpoints()
    tool = RecordingTool()
    first = ReActAgent(make_llm(), registry_of(tool), completion_check=False)
    task = asyncio.create_task(first.run("find a then b", checkpoint=checkpoints, metadata=RUN))
    await checkpoints.reached(iteration=1, stage=STAGE_MODEL)
    await scripted_llm.until_received(2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    # when a new agent (another process) resumes from the checkpoints
    scripted_llm.reset()
    scripted_llm.script(tool_calls(_search("b", "c2")), text("Found a and b."))
    events = EventLog()
    second = ReActAgent(make_llm(), registry_of(tool), completion_check=False)
    result = await second.run(
        "ignored", resume_from=checkpoints.folded(), on_event=events, checkpoint=checkpoints, metadata=RUN
    )

    # then it continues at iteration 2 with the history of iteration 1, and never redoes the first call
    assert result.answer == "Found a and b." and result.stop_reason == "final_answer"
    assert result.iterations == 3
    assert [c["q"] for c in tool.calls] == ["a", "b"]
    assert [r.tool_call_id for r in result.tool_calls] == ["c1", "c2"]
    asked = scripted_llm.requests[0]["messages"]
    assert [m["role"] for m in asked] == ["system", "user", "assistant", "tool"]
    assert asked[1]["content"] == "find a then b"
    assert events.steps("thinking", "start")[0]["iteration"] == 2


async def test_a_resumed_run_replays_its_pending_calls_without_asking_the_model_again(scripted_llm, make_llm):
    # given a run that stopped after the model asked for a call and before the call ran
    scripted_llm.script(tool_calls(_search("a", "c1")))
    checkpoints = Checkpoints()
    gate = asyncio.Event()
    blocked = RecordingTool(gate=gate)
    task = asyncio.create_task(
        ReActAgent(make_llm(), registry_of(blocked)).run("find a", checkpoint=checkpoints, metadata=RUN)
    )
    await blocked.until_running(1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    checkpoint = checkpoints.folded(checkpoints.last_where(STAGE_TOOLS))

    # when it resumes
    scripted_llm.reset()
    scripted_llm.script(text("Here is a."))
    tool = RecordingTool()
    events = EventLog()
    result = await ReActAgent(make_llm(), registry_of(tool), completion_check=False).run(
        "ignored", resume_from=checkpoint, on_event=events, metadata=RUN
    )

    # then the pending call runs first (the only model request is the one after it) with its own id
    assert tool.calls == [{"q": "a"}]
    assert len(scripted_llm.requests) == 1
    assert scripted_llm.requests[0]["messages"][-1] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": 'search: {"q": "a"}',
    }
    assert [s["tool_call_id"] for s in events.steps("iteration", "done")] == ["c1"]
    assert result.answer == "Here is a."


async def test_a_replayed_call_that_finished_gets_its_recorded_outcome_and_is_not_run_again(
    scripted_llm, make_llm
):
    # given a call that ran to completion, then the process died before the next checkpoint
    ledger = MemoryLedger()
    scripted_llm.script(tool_calls(_search("a", "c1")), hang(30))
    checkpoints = Checkpoints()
    tool = RecordingTool()
    task = asyncio.create_task(
        ReActAgent(make_llm(), registry_of(tool), ledger=ledger).run(
            "find a", checkpoint=checkpoints, metadata=RUN
        )
    )
    await ledger.finished.wait()
    assert ledger.rows[idempotency_key("run-1", "c1")]["finished"]
    await scripted_llm.until_received(2)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    # when the run resumes from the checkpoint where the call was still pending
    scripted_llm.reset()
    scripted_llm.script(text("Here is a."))
    events = EventLog()
    result = await ReActAgent(make_llm(), registry_of(tool), ledger=ledger, completion_check=False).run(
        "x",
        resume_from=checkpoints.folded(checkpoints.last_where(STAGE_TOOLS)),
        on_event=events,
        metadata=RUN,
    )

    # then the tool ran once in all, and the model saw the recorded observation
    assert tool.calls == [{"q": "a"}]
    assert result.tool_calls[0].observation == 'search: {"q": "a"}'
    assert events.steps("iteration", "done")[0]["observation"] == 'search: {"q": "a"}'


async def test_a_replayed_call_that_started_but_never_finished_is_not_repeated_and_reported_unknown(
    scripted_llm, make_llm
):
    ledger = MemoryLedger()
    scripted_llm.script(tool_calls(_search("a", "c1")))
    checkpoints = Checkpoints()
    gate = asyncio.Event()
    hanging = RecordingTool(gate=gate)
    task = asyncio.create_task(
        ReActAgent(make_llm(), registry_of(hanging), ledger=ledger).run(
            "find a", checkpoint=checkpoints, metadata=RUN
        )
    )
    await hanging.until_running(1)  # the call is in flight (begun in the ledger) when the process dies
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    scripted_llm.reset()
    scripted_llm.script(text("I could not confirm it."))
    tool = RecordingTool()
    result = await ReActAgent(make_llm(), registry_of(tool), ledger=ledger, completion_check=False).run(
        "x", resume_from=checkpoints.folded(checkpoints.last_where(STAGE_TOOLS)), metadata=RUN
    )

    assert tool.calls == []
    record = result.tool_calls[0]
    assert record.outcome == "error" and record.error == UNKNOWN_OUTCOME


async def test_every_call_is_handed_its_idempotency_key(scripted_llm, make_llm):
    seen: list[tuple[str, str | None]] = []

    class KeyProbe(Tool):
        name = "probe"
        description = "Probe."

        async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> str:
            seen.append((ctx.tool_call_id, ctx.idempotency_key))
            return "ok"

    scripted_llm.script(tool_calls(call("probe", {}, id="p1")), text("ok"))
    await ReActAgent(make_llm(), registry_of(KeyProbe()), ledger=MemoryLedger()).run("probe", metadata=RUN)
    assert seen == [("p1", "run-1:p1")]


class ParkingGate(PreToolUseHook):
    """Parks the run on its first sight of a call; on a replay, approves it."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool]] = []

    async def pre_tool_use(self, ctx: HookContext) -> PreVerdict:
        self.seen.append((ctx.tool_call_id, ctx.replayed))
        if not ctx.replayed:
            return Park("approval", {"approval_id": "ap-1"})
        return ALLOW


async def test_a_hook_that_parks_a_call_parks_the_run_without_a_done_event(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(_search("pay", "c1")))
    checkpoints = Checkpoints()
    events = EventLog()
    tool = RecordingTool()
    gate = ParkingGate()
    result = await ReActAgent(make_llm(), registry_of(tool), hooks=HookRegistry([gate])).run(
        "pay", checkpoint=checkpoints, on_event=events, metadata=RUN
    )

    assert result.stop_reason == "parked" and not result.cancelled
    assert result.park is not None and result.park.as_dict() == {"reason": "approval", "approval_id": "ap-1"}
    assert tool.calls == [] and "done" not in events.channels()
    last = checkpoints.items[-1]["state"]
    assert last["stage"] == STAGE_TOOLS and [c["id"] for c in last["pending"]] == ["c1"]
    assert last["announced"] == ["c1"]


async def test_a_parked_run_resumes_with_its_pending_call_seen_as_replayed_and_not_announced_twice(
    scripted_llm, make_llm
):
    scripted_llm.script(tool_calls(_search("pay", "c1")))
    checkpoints = Checkpoints()
    gate = ParkingGate()
    tool = RecordingTool()
    hooks = HookRegistry([gate])
    await ReActAgent(make_llm(), registry_of(tool), hooks=hooks).run(
        "pay", checkpoint=checkpoints, metadata=RUN
    )

    scripted_llm.reset()
    scripted_llm.script(text("Paid."))
    events = EventLog()
    result = await ReActAgent(make_llm(), registry_of(tool), hooks=hooks, completion_check=False).run(
        "x", resume_from=checkpoints.folded(), on_event=events, checkpoint=checkpoints, metadata=RUN
    )

    assert gate.seen == [("c1", False), ("c1", True)]
    assert tool.calls == [{"q": "pay"}]
    assert events.steps("iteration", "start") == []  # the chat already shows the call
    assert [s["tool_call_id"] for s in events.steps("iteration", "done")] == ["c1"]
    assert result.answer == "Paid."


async def test_a_run_resumed_after_its_answer_was_known_goes_straight_to_the_answer(scripted_llm, make_llm):
    scripted_llm.script(text("All good."))
    checkpoints = Checkpoints()
    await ReActAgent(make_llm(), registry_of()).run("hello", checkpoint=checkpoints)

    scripted_llm.reset()
    agent = ReActAgent(make_llm(), registry_of())
    result = await agent.run("x", resume_from=checkpoints.folded())
    assert result.answer == "All good." and result.stop_reason == "final_answer"
    assert scripted_llm.requests == []


async def test_a_resumed_run_keeps_its_cycle_tracker_and_checklist_state(scripted_llm, make_llm):
    # given a run that called the same tool twice with the same arguments before stopping
    same = _search("same", "c1")
    scripted_llm.script(tool_calls(same), tool_calls(_search("same", "c2")), hang(30))
    checkpoints = Checkpoints()
    tool = RecordingTool()
    agent = ReActAgent(make_llm(), registry_of(tool), completion_check_min_tools=1)
    task = asyncio.create_task(agent.run("loop", checkpoint=checkpoints))
    await checkpoints.reached(iteration=2, stage=STAGE_MODEL)
    await scripted_llm.until_received(3)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)

    # when it resumes and calls it a third time
    scripted_llm.reset()
    scripted_llm.script(tool_calls(_search("same", "c3")), text("first"), text("final"))
    resumed = ReActAgent(make_llm(), registry_of(tool), completion_check_min_tools=1)
    result = await resumed.run("x", resume_from=checkpoints.folded())

    # then the third identical call is a cycle (counted across the resume), and the checklist comes once
    after_third = scripted_llm.requests[1]["messages"]
    assert any("identical arguments 3 times" in str(m.get("content")) for m in after_third)
    assert result.answer == "final"


async def test_the_checkpoint_counts_the_follow_ups_the_run_took(scripted_llm, make_llm):
    queue = FollowUpQueue()

    class FollowingUp(RecordingTool):
        async def execute(self, ctx: ToolCallContext, /, **kwargs: Any) -> Any:
            queue.put("also check b")
            return await super().execute(ctx, **kwargs)

    scripted_llm.script(tool_calls(_search("a", "c1")), text("done"))
    checkpoints = Checkpoints()
    agent = ReActAgent(make_llm(), registry_of(FollowingUp()), follow_ups=queue, completion_check=False)
    await agent.run("find a", checkpoint=checkpoints)
    assert checkpoints.folded()["interrupts_taken"] == 1


def test_after_a_compaction_the_next_checkpoint_replaces_the_whole_history():
    from agents.engine.events import Emitter
    from agents.engine.run_state import RunState
    from agents.engine.transcript import Transcript

    run = RunState("q", {}, Emitter(None), registry_of())
    run.transcript = Transcript([{"role": "system", "content": "s"}, {"role": "user", "content": "q"}])
    first = run.checkpoint()
    run.transcript.append({"role": "assistant", "content": "a"})
    second = run.checkpoint()
    run.transcript.replace([{"role": "user", "content": "summary", "_summary": True}])
    third = run.checkpoint()

    assert first.reset and not second.reset and len(second.messages) == 1
    assert third.reset and third.messages == [{"role": "user", "content": "summary", "_summary": True}]
    folded = checkpoints_fold([first.as_dict(), second.as_dict(), third.as_dict()])
    assert folded is not None and folded["messages"] == run.full_checkpoint()["messages"]


async def test_json_mode_runs_resume_their_pending_call_too(scripted_llm, make_llm):
    action = json.dumps(
        {"reasoning": "r", "action": {"type": "tool_call", "tool_name": "search", "tool_args": {"q": "a"}}}
    )
    scripted_llm.script(text(action))
    checkpoints = Checkpoints()
    gate = ParkingGate()
    hooks = HookRegistry([gate])
    llm = make_llm(tool_call=False)
    await ReActAgent(llm, registry_of(RecordingTool()), hooks=hooks).run(
        "a?", checkpoint=checkpoints, metadata=RUN
    )

    scripted_llm.reset()
    final = json.dumps({"reasoning": "r", "action": {"type": "final_answer", "answer": "a is 1"}})
    scripted_llm.script(text(final))
    tool = RecordingTool()
    result = await ReActAgent(llm, registry_of(tool), hooks=hooks, completion_check=False).run(
        "x", resume_from=checkpoints.folded(), metadata=RUN
    )
    assert tool.calls == [{"q": "a"}]
    assert result.answer == "a is 1"
    assert scripted_llm.requests[0]["messages"][-1]["content"].endswith('search: {"q": "a"}')


def test_a_checkpoint_of_an_unknown_version_is_refused():
    from agents.engine.events import Emitter
    from agents.engine.run_state import RunState

    with pytest.raises(ValueError, match="version"):
        RunState.restore({"v": 99}, {}, Emitter(None), registry_of())


async def test_a_tool_result_restored_from_a_checkpoint_keeps_its_error(scripted_llm, make_llm):
    scripted_llm.script(tool_calls(_search("a", "c1")), text("sorry"))
    checkpoints = Checkpoints()
    failing = RecordingTool(result=ToolResult.failure("down"))
    await ReActAgent(make_llm(), registry_of(failing), completion_check=False).run(
        "a", checkpoint=checkpoints
    )
    restored = ReActAgent(make_llm(), registry_of(failing))
    result = await restored.run("x", resume_from=checkpoints.folded())
    assert result.tool_calls[0].error == "down" and result.tool_calls[0].result.is_error
