"""Checkpoints of a run: its state as JSON, reported incrementally after every iteration.

A run's *checkpoint* is a JSON object holding everything it needs to continue in another process: the
history (``messages``), the tool call records (``records``) and the loop's state (iteration, usage,
cycle tracker, reflection and checklist counters, follow-ups taken, the tools selected, and the tool
calls of the current turn while they are ``pending``). ``ReActAgent.run(resume_from=checkpoint)``
continues from one.

A :class:`Checkpoint` is what changed since the previous one: the new state, and only the messages and
records appended since and the cycle tracker's counts that changed (everything after a compaction
replaced the history, ``reset``). The loop hands one to its ``checkpoint`` callback after each model
reply with tool calls (they are then pending) and after each iteration; :func:`checkpoint_apply` folds
them, in order, back into the run's checkpoint. So checkpointing costs the same per turn however long
the run is.

The folded checkpoint's ``cycles`` is a list of ``[tool name, canonical arguments, count]`` entries in
the order they were reported; a later entry for the same call supersedes an earlier one (restoring keeps
the last count). Checkpoints stored before the tracker was reported incrementally carry the whole list in
their ``state``; folding one replaces the list, so such runs still resume.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.engine.llm import Message
from agents.engine.parsing import ToolCall
from agents.engine.tools import ToolCallRecord, ToolResult

CHECKPOINT_VERSION = 1

#: Where the loop stands in a checkpoint: about to ask the model, about to run ``pending`` tool calls, or
#: finished with a ``final`` answer still to stream.
STAGE_MODEL = "model"
STAGE_TOOLS = "tools"
STAGE_ANSWER = "answer"


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The change since a run's previous checkpoint (see the module docstring).

    ``state`` replaces the previous state; ``messages``, ``records`` and ``cycles`` (the cycle
    tracker's changed ``[tool name, canonical arguments, count]`` entries) are appended (``reset``: they
    replace the whole history, every record and the whole tracker). ``seq`` counts the run's
    checkpoints from 1.
    """

    seq: int
    state: Mapping[str, Any]
    messages: list[Message]
    records: list[dict[str, Any]]
    reset: bool
    cycles: list[list[Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the state, message and record dicts are shared, not copied)."""
        return {
            "seq": self.seq,
            "state": self.state,
            "messages": self.messages,
            "records": self.records,
            "cycles": self.cycles,
            "reset": self.reset,
        }


CheckpointCallback = Callable[[Checkpoint], Awaitable[None]]


def checkpoint_apply(checkpoint: dict[str, Any] | None, change: Mapping[str, Any]) -> dict[str, Any]:
    """Fold one :class:`Checkpoint` (or its ``as_dict()``) into the run's ``checkpoint`` (changed in
    place) and return it; ``None`` starts a new one."""
    if isinstance(change, Checkpoint):
        change = change.as_dict()
    checkpoint = checkpoint if checkpoint is not None else {"messages": [], "records": [], "cycles": []}
    messages = change.get("messages") or ()
    records = change.get("records") or ()
    cycles = change.get("cycles") or ()
    if change.get("reset"):
        checkpoint["messages"], checkpoint["records"] = list(messages), list(records)
        checkpoint["cycles"] = list(cycles)
    else:
        checkpoint["messages"].extend(messages)
        checkpoint["records"].extend(records)
        checkpoint.setdefault("cycles", []).extend(cycles)
    state = change.get("state") or {}
    checkpoint.update(state)
    if "cycles" in state:  # stored before the tracker was reported incrementally: all of it, replaced
        checkpoint["cycles"] = list(state["cycles"] or ())
    checkpoint["seq"] = change.get("seq", checkpoint.get("seq", 0))
    return checkpoint


def checkpoints_fold(changes: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The checkpoint that a run's :class:`Checkpoint` changes, in order, add up to (``None`` without any)."""
    checkpoint: dict[str, Any] | None = None
    for change in changes:
        checkpoint = checkpoint_apply(checkpoint, change)
    if checkpoint is not None and checkpoint.get("cycles"):
        # One entry per call, its last count (the entries a later one superseded dropped).
        last = {(entry[0], entry[1]): entry[2] for entry in checkpoint["cycles"]}
        checkpoint["cycles"] = [[name, args, count] for (name, args), count in last.items()]
    return checkpoint


def record_to_dict(record: ToolCallRecord) -> dict[str, Any]:
    return {
        "id": record.tool_call_id,
        "name": record.name,
        "args": dict(record.args),
        "observation": record.observation,
        "error": record.error,
        "outcome": record.outcome,
        "iteration": record.iteration,
        "elapsed": record.elapsed,
    }


def record_from_dict(data: Mapping[str, Any]) -> ToolCallRecord:
    error = data.get("error")
    observation = str(data.get("observation") or "")
    return ToolCallRecord(
        tool_call_id=str(data.get("id") or ""),
        name=str(data.get("name") or ""),
        args=dict(data.get("args") or {}),
        observation=observation,
        error=error,
        outcome=str(data.get("outcome") or "ok"),
        iteration=int(data.get("iteration") or 0),
        elapsed=float(data.get("elapsed") or 0.0),
        result=ToolResult(content=observation, is_error=error is not None, error=error),
    )


def call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "args": dict(call.args), "args_error": call.args_error}


def call_from_dict(data: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        id=str(data["id"]),
        name=str(data["name"]),
        args=dict(data.get("args") or {}),
        args_error=data.get("args_error"),
    )


__all__ = [
    "CHECKPOINT_VERSION",
    "STAGE_ANSWER",
    "STAGE_MODEL",
    "STAGE_TOOLS",
    "Checkpoint",
    "CheckpointCallback",
    "call_from_dict",
    "call_to_dict",
    "checkpoint_apply",
    "checkpoints_fold",
    "record_from_dict",
    "record_to_dict",
]
