"""Shared helpers of the plan-mode tests (no tests here).

Plan steps run concurrently, so the scripted server cannot answer them from one ordered queue:
:class:`PlanScript` is a reply source that looks at each request, tells who sent it (the planner, the
analyser, the history summariser, the synthesiser, or step ``<id>``), records it with its model and arrival
time, and answers from that sender's own queue.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

import pytest

from agents.engine.model_registry import ModelRegistry
from tests.fakes.openai_server import Reply, call, error, text, tool_calls

PLANNER = "planner"
ANALYZER = "analyzer"
SUMMARY = "summary"
SYNTHESIS = "synthesis"
ROUTER = "router"
STEP = "step"

_STEP_ID = re.compile(r"Your step \(([^)]*)\):")


@dataclass
class Request:
    kind: str
    step_id: str | None
    model: str
    arrived: float
    body: dict[str, Any]

    def text(self) -> str:
        return "\n".join(str(m.get("content") or "") for m in self.body["messages"])

    def user(self, index: int = 0) -> str:
        users = [m for m in self.body["messages"] if m["role"] == "user"]
        return str(users[index]["content"])


def classify(body: dict[str, Any]) -> tuple[str, str | None]:
    if body.get("stream"):
        return SYNTHESIS, None
    messages = body["messages"]
    system = str(messages[0].get("content") or "") if messages and messages[0]["role"] == "system" else ""
    if system.startswith("You plan how"):
        return PLANNER, None
    if system.startswith("You judge whether"):
        return ANALYZER, None
    if system.startswith("Summarise this conversation"):
        return SUMMARY, None
    if system.startswith("Choose how an AI agent"):
        return ROUTER, None
    for message in messages:
        if message["role"] == "user":
            match = _STEP_ID.search(str(message.get("content") or ""))
            if match:
                return STEP, match.group(1)
            break
    return "unknown", None


class PlanScript:
    """Replies per sender; ``requests`` records every request in arrival order."""

    def __init__(self) -> None:
        self._queues: dict[tuple[str, str | None], deque[Any]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.requests: list[Request] = []

    def planner(self, *replies: Any) -> PlanScript:
        self._queues[(PLANNER, None)].extend(replies)
        return self

    def analyzer(self, *replies: Any) -> PlanScript:
        self._queues[(ANALYZER, None)].extend(replies)
        return self

    def summary(self, *replies: Any) -> PlanScript:
        self._queues[(SUMMARY, None)].extend(replies)
        return self

    def synthesis(self, *replies: Any) -> PlanScript:
        self._queues[(SYNTHESIS, None)].extend(replies)
        return self

    def step(self, step_id: str, *replies: Any) -> PlanScript:
        self._queues[(STEP, step_id)].extend(replies)
        return self

    def __call__(self, body: dict[str, Any]) -> Reply:
        kind, step_id = classify(body)
        with self._lock:
            self.requests.append(Request(kind, step_id, body.get("model", ""), time.monotonic(), body))
            queue = self._queues.get((kind, step_id))
            reply = queue.popleft() if queue else None
        if reply is None:
            return error(500, message=f"PlanScript: nothing scripted for {kind} {step_id or ''}")
        return reply(body) if callable(reply) else reply

    def of(self, kind: str, step_id: str | None = None) -> list[Request]:
        return [r for r in self.requests if r.kind == kind and (step_id is None or r.step_id == step_id)]

    def install(self, server: Any, count: int = 200) -> PlanScript:
        server.script(*([self] * count))
        return self


def step(
    id: str,
    task: str,
    dependencies: list[str] | None = None,
    tool_hint: str | None = None,
    model_hint: str | None = None,
) -> dict[str, Any]:
    return {
        "id": id,
        "task": task,
        "dependencies": dependencies or [],
        "tool_hint": tool_hint,
        "model_hint": model_hint,
    }


def plan_reply(*steps: dict[str, Any], **kwargs: Any) -> Any:
    """The planner answering through a native function call."""
    return tool_calls(call("make_plan", {"steps": list(steps)}), **kwargs)


def verdict(
    achieved: bool = False, confidence: float = 0.0, reasoning: str = "", final_answer: str = ""
) -> Any:
    """The analyser answering through a native function call."""
    return tool_calls(
        call(
            "judge_plan",
            {
                "achieved": achieved,
                "confidence": confidence,
                "reasoning": reasoning,
                "final_answer": final_answer,
            },
        )
    )


def answer(content: str, **kwargs: Any) -> Any:
    return text(content, **kwargs)


@pytest.fixture
def registry(make_llm: Any) -> ModelRegistry:
    """A registry whose roles are told apart by model name (the scripted server records it)."""
    return ModelRegistry(
        {
            "general": make_llm(model="general-model"),
            "fast": make_llm(model="fast-model"),
            "smart": make_llm(model="smart-model"),
            "reasoning": make_llm(model="reasoning-model"),
        }
    )


@pytest.fixture
def script(scripted_llm: Any) -> PlanScript:
    """A :class:`PlanScript` answering every request to the scripted server."""
    return PlanScript().install(scripted_llm)
