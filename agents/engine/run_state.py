"""The state of one run and its result."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.engine.context_summary import BOOKKEEPING_KEY
from agents.engine.durable.checkpoint import (
    CHECKPOINT_VERSION,
    STAGE_ANSWER,
    STAGE_MODEL,
    STAGE_TOOLS,
    Checkpoint,
    call_from_dict,
    call_to_dict,
    record_from_dict,
    record_to_dict,
)
from agents.engine.events import Emitter
from agents.engine.llm import Message, Usage
from agents.engine.parsing import ToolCall
from agents.engine.run_context import RunContext
from agents.engine.stop_reasons import StopReason
from agents.engine.tools import ToolCallRecord, ToolRegistry
from agents.engine.transcript import Transcript
from agents.engine.verdicts import Park


@dataclass(frozen=True, slots=True)
class AgentResult:
    """The outcome of one ``run()``.

    ``stop_reason`` is ``final_answer``, ``max_iterations``, ``token_budget``, ``llm_error``,
    ``cancelled`` (empty answer), ``unparsed_output`` (the model's raw reply after two unparseable
    JSON-mode replies, or a summary when it was blank), ``empty_response`` or ``parked`` (a hook
    parked the run: ``park`` says why; the run's last checkpoint resumes it); for the other
    reasons the answer summarises the partial results: which tools were called and how they went.
    ``tool_calls`` records every call (name, args, observation, error, outcome). ``language`` is the
    user's interface language the run was given (``None``: stop messages follow the query's language).
    """

    answer: str
    messages: list[Message]
    iterations: int
    usage: Usage
    elapsed: float
    tool_calls: tuple[ToolCallRecord, ...]
    cancelled: bool = False
    stop_reason: StopReason = StopReason.FINAL_ANSWER
    query: str = ""
    park: Park | None = None
    language: str | None = None


def note(content: str) -> Message:
    """A user-role message the engine writes itself (never a user turn for the context guard)."""
    return {"role": "user", "content": content, BOOKKEEPING_KEY: True}


class RunState:
    """The mutable state of one run (one per ``run()`` call, so trackers reset per run).

    :meth:`full_checkpoint` and :meth:`checkpoint` make it durable; :meth:`restore` brings it back.
    """

    __slots__ = (
        "query",
        "language",
        "metadata",
        "emit",
        "started",
        "usage",
        "iteration",
        "transcript",
        "registry",
        "records",
        "cycles",
        "real_calls",
        "checked",
        "parse_failures",
        "empty_replies",
        "turn_compaction",
        "turn_llm",
        "turn_tools",
        "stage",
        "pending",
        "announced",
        "final",
        "follow_ups_taken",
        "selected",
        "resumed",
        "_cp_seq",
        "_cp_messages",
        "_cp_generation",
        "_cp_records",
        "_cp_cycles",
    )

    def __init__(
        self,
        query: str,
        metadata: RunContext,
        emit: Emitter,
        registry: ToolRegistry,
        *,
        language: str | None = None,
    ) -> None:
        self.query = query
        # The user's interface language (the language of stop and fallback messages); None: the query's.
        self.language = language
        self.metadata = metadata
        self.emit = emit
        self.started = time.perf_counter()
        self.usage = Usage()
        self.iteration = 0
        self.transcript = Transcript()
        self.registry = registry
        self.records: list[ToolCallRecord] = []
        self.cycles: dict[tuple[str, str], int] = {}
        self.real_calls = 0
        self.checked = False
        self.parse_failures = 0
        self.empty_replies = 0
        self.turn_compaction = self.turn_llm = self.turn_tools = 0.0
        # Durable runs: where the loop stands, the current turn's calls while they are pending (and which
        # of them the chat was told about), the final answer once known, the follow-ups taken.
        self.stage = STAGE_MODEL
        self.pending: list[ToolCall] | None = None
        self.announced: set[str] = set()
        self.final: tuple[str, StopReason] | None = None
        self.follow_ups_taken = 0
        self.selected: list[str] | None = None
        self.resumed = False
        self._cp_seq = 0
        self._cp_messages = 0
        self._cp_generation = -1
        self._cp_records = 0
        # The cycle tracker's entries counted since the previous checkpoint (key -> count, in order).
        self._cp_cycles: dict[tuple[str, str], int] = {}

    def result(
        self,
        answer: str,
        stop_reason: StopReason,
        *,
        cancelled: bool = False,
        park: Park | None = None,
    ) -> AgentResult:
        return AgentResult(
            answer=answer,
            messages=self.transcript.messages,
            iterations=self.iteration,
            usage=self.usage,
            elapsed=round(time.perf_counter() - self.started, 4),
            tool_calls=tuple(self.records),
            cancelled=cancelled,
            stop_reason=stop_reason,
            query=self.query,
            park=park,
            language=self.language,
        )

    # -- durability ----------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        usage = self.usage
        return {
            "v": CHECKPOINT_VERSION,
            "query": self.query,
            "iteration": self.iteration,
            "usage": usage.as_dict(),
            "real_calls": self.real_calls,
            "checked": self.checked,
            "parse_failures": self.parse_failures,
            "empty_replies": self.empty_replies,
            "stage": self.stage,
            "pending": [call_to_dict(c) for c in self.pending] if self.pending is not None else None,
            "announced": sorted(self.announced) if self.announced else [],
            "final": list(self.final) if self.final is not None else None,
            "interrupts_taken": self.follow_ups_taken,
            "selected_tools": self.selected,
            "elapsed": round(time.perf_counter() - self.started, 4),
        }

    def checkpoint(self) -> Checkpoint:
        """What changed since the previous checkpoint (the first one, and the first after a compaction,
        carries everything)."""
        transcript = self.transcript
        messages = transcript.messages
        reset = transcript.generation != self._cp_generation
        records = self.records
        new_messages = messages[:] if reset else messages[self._cp_messages :]
        # Most checkpoints add no record or cycle count (one of a turn's two): nothing to build then.
        first_record = 0 if reset else self._cp_records
        new_records = (
            [record_to_dict(r) for r in records[first_record:]] if len(records) > first_record else []
        )
        cycles = self.cycles if reset else self._cp_cycles
        new_cycles = _cycle_entries(cycles) if cycles else []
        self._cp_seq += 1
        self._cp_messages = len(messages)
        self._cp_generation = transcript.generation
        self._cp_records = len(records)
        if self._cp_cycles:
            self._cp_cycles = {}
        return Checkpoint(self._cp_seq, self._state(), new_messages, new_records, reset, new_cycles)

    def checkpoint_failed(self) -> None:
        """The last checkpoint may be lost: make the next one carry everything."""
        self._cp_generation = -1

    def full_checkpoint(self) -> dict[str, Any]:
        """The whole state as one JSON-ready checkpoint (what every checkpoint so far adds up to)."""
        checkpoint = self._state()
        checkpoint["messages"] = list(self.transcript.messages)
        checkpoint["records"] = [record_to_dict(r) for r in self.records]
        checkpoint["cycles"] = _cycle_entries(self.cycles)
        checkpoint["seq"] = self._cp_seq
        return checkpoint

    @classmethod
    def restore(
        cls,
        checkpoint: Mapping[str, Any],
        metadata: RunContext,
        emit: Emitter,
        registry: ToolRegistry,
        *,
        language: str | None = None,
    ) -> RunState:
        """The state a checkpoint describes, ready to continue (later checkpoints follow its ``seq``);
        ``language`` is the user's interface language (see :meth:`__init__`)."""
        version = checkpoint.get("v")
        if version != CHECKPOINT_VERSION:
            raise ValueError(f"unsupported run checkpoint version {version!r}")
        run = cls(str(checkpoint.get("query") or ""), metadata, emit, registry, language=language)
        run.started -= float(checkpoint.get("elapsed") or 0.0)
        usage = checkpoint.get("usage") or {}
        run.usage = Usage.from_dict(usage)
        run.iteration = int(checkpoint.get("iteration") or 0)
        run.transcript = Transcript(checkpoint.get("messages") or ())
        run.records = [record_from_dict(r) for r in checkpoint.get("records") or ()]
        # A later entry for the same call supersedes an earlier one (see agents.engine.durable.checkpoint).
        run.cycles = {(str(n), str(a)): int(c) for n, a, c in checkpoint.get("cycles") or ()}
        run.real_calls = int(checkpoint.get("real_calls") or 0)
        run.checked = bool(checkpoint.get("checked"))
        run.parse_failures = int(checkpoint.get("parse_failures") or 0)
        run.empty_replies = int(checkpoint.get("empty_replies") or 0)
        run.stage = str(checkpoint.get("stage") or STAGE_MODEL)
        pending = checkpoint.get("pending")
        run.pending = [call_from_dict(c) for c in pending] if pending is not None else None
        run.announced = set(checkpoint.get("announced") or ())
        final = checkpoint.get("final")
        run.final = (str(final[0]), StopReason(final[1])) if final else None
        run.follow_ups_taken = int(checkpoint.get("interrupts_taken") or 0)
        selected = checkpoint.get("selected_tools")
        if selected is not None:
            run.selected = [str(name) for name in selected]
            run.registry = registry.subset(run.selected)
        run.resumed = True
        run._cp_seq = int(checkpoint.get("seq") or 0)
        run._cp_messages = len(run.transcript.messages)
        run._cp_generation = run.transcript.generation
        run._cp_records = len(run.records)
        return run

    def count_call(self, key: tuple[str, str]) -> int:
        """Count one more call of ``key`` (tool name, canonical arguments) in the cycle tracker."""
        count = self.cycles[key] = self.cycles.get(key, 0) + 1
        self._cp_cycles[key] = count
        return count

    def tools_pending(self, calls: list[ToolCall]) -> None:
        """The model asked for ``calls``: they are pending until their results are in the history."""
        self.stage = STAGE_TOOLS
        self.pending = calls
        self.announced = set()

    def tools_done(self) -> None:
        self.stage = STAGE_MODEL
        self.pending = None
        self.announced = set()

    def finished(self, answer: str, stop_reason: StopReason) -> None:
        self.stage = STAGE_ANSWER
        self.final = (answer, stop_reason)


def _cycle_entries(counts: Mapping[tuple[str, str], int]) -> list[list[Any]]:
    return [[name, args, count] for (name, args), count in counts.items()]
