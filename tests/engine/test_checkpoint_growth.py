"""Durable runs stay flat in their length: a checkpoint carries what changed (messages, records, cycle
counts), and the fold of a run's checkpoints rebuilds the rest, including checkpoints stored before."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from agents.engine.durable.checkpoint import STAGE_MODEL, Checkpoint, checkpoints_fold
from agents.engine.events import Emitter
from agents.engine.guidance import after_tool_calls
from agents.engine.llm import ChatResponse, Message
from agents.engine.parsing import ToolCall
from agents.engine.react import ReActAgent
from agents.engine.run_context import RunContext
from agents.engine.run_state import RunState
from agents.engine.transcript import Transcript
from tests.engine.doubles import FakeLLM, RecordingTool, registry_of, say, use

CYCLE_WARNING = "identical arguments 3 times"


class Stored:
    """A ``checkpoint`` callback keeping what the platform stores: each checkpoint as JSON text."""

    def __init__(self) -> None:
        self.rows: list[str] = []

    async def __call__(self, checkpoint: Checkpoint) -> None:
        self.rows.append(json.dumps(checkpoint.as_dict()))

    def items(self, upto: int | None = None) -> list[dict[str, Any]]:
        return [json.loads(row) for row in self.rows[:upto]]

    def folded(self, upto: int | None = None) -> dict[str, Any]:
        folded = checkpoints_fold(self.items(upto))
        assert folded is not None
        return folded

    def upto_last_model_stage(self) -> int:
        """How many checkpoints there are up to the last one before the model is asked again."""
        return max(i for i, item in enumerate(self.items()) if item["state"]["stage"] == STAGE_MODEL) + 1


def searches(*queries: str) -> list[ChatResponse]:
    return [use(("search", {"q": query})) for query in queries]


def scripted(replies: Sequence[ChatResponse]) -> FakeLLM:
    """Replies in order, then a final answer for as long as asked."""
    queue = list(replies)

    def respond(messages: Sequence[Message]) -> ChatResponse:
        return queue.pop(0) if queue else say("Done.")

    return FakeLLM(responder=respond)


def agent(llm: Any, **options: Any) -> ReActAgent:
    options.setdefault("completion_check", False)
    return ReActAgent(llm, registry_of(RecordingTool()), max_iterations=250, **options)


def first_warned(llm: FakeLLM) -> int | None:
    """The first model request (by index) that showed a cycle warning for a third identical call."""
    for index, request in enumerate(llm.calls):
        if any(CYCLE_WARNING in str(message.get("content")) for message in request["messages"]):
            return index
    return None


def stored_as_before(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` as checkpoints were stored before the cycle tracker was reported incrementally: every
    state carried the whole tracker, and there was no ``cycles`` of its own."""
    tracker: dict[tuple[str, str], int] = {}
    old = []
    for item in copy.deepcopy(items):
        if item["reset"]:
            tracker = {}
        for name, args, count in item.pop("cycles"):
            tracker[(name, args)] = count
        item["state"]["cycles"] = [[name, args, count] for (name, args), count in tracker.items()]
        old.append(item)
    return old


async def test_a_checkpoints_size_does_not_grow_with_the_number_of_tool_calls():
    # given a run of 200 tool calls, every one with new arguments (so the cycle tracker grows every turn)
    llm = scripted(searches(*(f"query {n}" for n in range(200))))
    stored = Stored()
    result = await agent(llm).run("search 200 times", checkpoint=stored)
    assert result.iterations == 201 and len(stored.rows) > 400

    # then a checkpoint late in the run is as large as the same kind of checkpoint early in it, give or
    # take the digits of longer counters (the pending calls, the state after an iteration)
    sizes: dict[str, list[int]] = {}
    for row, item in zip(stored.rows, stored.items(), strict=True):
        sizes.setdefault(item["state"]["stage"], []).append(len(row))
    for stage in ("tools", "model"):
        assert abs(sizes[stage][-1] - sizes[stage][9]) <= 64, stage
        assert max(sizes[stage][1:]) <= max(sizes[stage][1:13]) + 64, stage  # the first carries everything
    assert len(stored.rows[-1]) <= len(stored.rows[9]) + 64


async def test_only_the_cycle_counts_that_changed_are_in_a_checkpoint():
    llm = scripted(searches("a", "b", "a", "c"))
    stored = Stored()
    await agent(llm).run("search", checkpoint=stored)

    changed = [item["cycles"] for item in stored.items()]
    key = json.dumps({"q": "a"}, sort_keys=True, ensure_ascii=False)
    assert [["search", key, 2]] in changed  # the second call of "a" reports its new count alone
    assert all(len(cycles) <= 1 for cycles in changed)
    assert {(n, a): c for n, a, c in stored.folded()["cycles"]} == {
        ("search", key): 2,
        ("search", json.dumps({"q": "b"})): 1,
        ("search", json.dumps({"q": "c"})): 1,
    }


async def test_a_restored_run_still_detects_a_cycle_it_saw_before_the_checkpoint():
    # given a run that called search("same") twice, long before its last checkpoint
    llm = scripted(searches("same", "same", *(f"other {n}" for n in range(20))))
    stored = Stored()
    await agent(llm).run("loop", checkpoint=stored)
    upto = stored.upto_last_model_stage()
    assert first_warned(llm) is None
    assert not any("same" in json.dumps(item["cycles"]) for item in stored.items(upto)[-20:])

    # when it resumes from its checkpoints and calls search("same") a third time
    resumed_llm = scripted(searches("same"))
    await agent(resumed_llm).run("x", resume_from=stored.folded(upto))

    # then the third identical call is a cycle, counted across the restore
    assert first_warned(resumed_llm) == 1


async def test_a_run_stored_with_the_whole_cycle_tracker_in_every_checkpoint_still_resumes():
    # given a run's checkpoints as they were stored before this change (a stored run resumed after deploy)
    llm = scripted(searches("same", "same", "other"))
    stored = Stored()
    await agent(llm).run("loop", checkpoint=stored)
    old = stored_as_before(stored.items(stored.upto_last_model_stage()))
    assert all("cycles" not in item and item["state"]["cycles"] for item in old[1:])

    # when it resumes and calls search("same") again (its new checkpoints follow the old ones)
    resumed_llm = scripted(searches("same", "another"))
    more = Stored()
    await agent(resumed_llm).run("x", resume_from=checkpoints_fold(copy.deepcopy(old)), checkpoint=more)

    # then the cycle is detected, and the old checkpoints followed by the new ones fold to every count
    assert first_warned(resumed_llm) == 1
    new = more.items(more.upto_last_model_stage())
    assert not new[0]["reset"]
    folded = checkpoints_fold([*copy.deepcopy(old), *new])
    assert folded is not None
    counts = {json.loads(args)["q"]: count for _name, args, count in folded["cycles"]}
    assert counts == {"same": 3, "other": 1, "another": 1}


def test_the_cycle_key_is_the_canonical_json_the_checkpoints_stored_before_carry():
    # keys stored by earlier code must match the keys counted now, or a resumed run misses its cycles
    args: list[dict[str, Any]] = [
        {"q": "café", "n": 1},
        {"b": [1, 2.5, None, True], "a": {"z": "\u2603", "y": '"quoted"\n'}},
        {"when": __import__("datetime").date(2026, 1, 2), "nan": float("nan")},
        {},
    ]
    run = RunState("q", RunContext.of(None), Emitter(None), registry_of())
    calls = [ToolCall(id=f"c{i}", name="tool", args=a) for i, a in enumerate(args)]
    after_tool_calls(run, calls, cycle_threshold=3, reflection_interval=0)
    expected = [json.dumps(a, sort_keys=True, ensure_ascii=False, default=str) for a in args]
    assert [key for _name, key in run.cycles] == expected


def _run_with_calls(*queries: str) -> RunState:
    run = RunState("q", RunContext.of(None), Emitter(None), registry_of())
    run.transcript = Transcript([{"role": "system", "content": "s"}, {"role": "user", "content": "q"}])
    for query in queries:
        run.count_call(("search", json.dumps({"q": query})))
    return run


def test_after_a_lost_checkpoint_the_next_one_carries_the_whole_cycle_tracker():
    run = _run_with_calls("a", "b")
    first = run.checkpoint()
    run.count_call(("search", json.dumps({"q": "c"})))
    run.checkpoint_failed()
    second = run.checkpoint()
    run.count_call(("search", json.dumps({"q": "a"})))
    third = run.checkpoint()

    assert first.reset and len(first.cycles) == 2
    assert second.reset and [entry[1] for entry in second.cycles] == [
        json.dumps({"q": q}) for q in ("a", "b", "c")
    ]
    assert not third.reset and third.cycles == [["search", json.dumps({"q": "a"}), 2]]
    folded = checkpoints_fold([second.as_dict(), third.as_dict()])
    assert folded is not None and folded["cycles"] == run.full_checkpoint()["cycles"]


def test_after_a_compaction_the_next_checkpoint_carries_the_whole_cycle_tracker():
    run = _run_with_calls("a")
    run.checkpoint()
    run.count_call(("search", json.dumps({"q": "b"})))
    run.checkpoint()
    run.transcript.replace([{"role": "user", "content": "summary", "_summary": True}])
    compacted = run.checkpoint()

    assert compacted.reset and len(compacted.cycles) == 2
    folded = checkpoints_fold([compacted.as_dict()]) or {}
    restored = RunState.restore(folded, RunContext.of(None), Emitter(None), registry_of())
    assert restored.cycles == run.cycles
