"""The state of one run and its result."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents.engine.context_summary import BOOKKEEPING_KEY
from agents.engine.events import Emitter
from agents.engine.llm import Message, Usage
from agents.engine.tool_runner import ToolCallRecord
from agents.engine.tools import ToolRegistry
from agents.engine.transcript import Transcript

STOP_FINAL_ANSWER = "final_answer"
STOP_MAX_ITERATIONS = "max_iterations"
STOP_TOKEN_BUDGET = "token_budget"
STOP_LLM_ERROR = "llm_error"
STOP_CANCELLED = "cancelled"
STOP_UNPARSED_OUTPUT = "unparsed_output"
STOP_EMPTY_RESPONSE = "empty_response"


@dataclass(frozen=True, slots=True)
class AgentResult:
    """The outcome of one ``run()``.

    ``stop_reason`` is ``final_answer``, ``max_iterations``, ``token_budget``, ``llm_error``,
    ``cancelled`` (empty answer), ``unparsed_output`` (the model's raw reply after two unparseable
    JSON-mode replies, or a summary when it was blank) or ``empty_response``; for the other reasons
    the answer summarises the partial results: which tools were called and how they went.
    ``tool_calls`` records every call (name, args, observation, error, outcome).
    """

    answer: str
    messages: list[Message]
    iterations: int
    usage: Usage
    elapsed: float
    tool_calls: tuple[ToolCallRecord, ...]
    cancelled: bool = False
    stop_reason: str = STOP_FINAL_ANSWER
    query: str = ""


def note(content: str) -> Message:
    """A user-role message the engine writes itself (never a user turn for the context guard)."""
    return {"role": "user", "content": content, BOOKKEEPING_KEY: True}


class RunState:
    """The mutable state of one run (one per ``run()`` call, so trackers reset per run)."""

    __slots__ = (
        "query",
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
    )

    def __init__(
        self, query: str, metadata: Mapping[str, Any], emit: Emitter, registry: ToolRegistry
    ) -> None:
        self.query = query
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

    def result(self, answer: str, stop_reason: str, *, cancelled: bool = False) -> AgentResult:
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
        )
